import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { isDeepStrictEqual } from 'node:util'
import { applyUpdate, goJson, LAST_APPLIED_ANNOTATION } from '../../../hooks/framework/wire/apply.js'
import { unchangingAnswer, type Stamp } from '../../../hooks/framework/wire/last-applied.js'
import type { KubernetesObject } from '../../../hooks/framework/wire/schemas.js'
import { fixture } from '../../helpers/fixtures.js'

type Json = Record<string, any>

test('every child a real Metacontroller v4.17.2 sent can be answered as it is: its annotation reads back byte for byte', () => {
  const corpus = join(import.meta.dirname, '..', '..', 'fixtures', 'conformance', 'metacontroller-v4.17.2')
  let children = 0
  for (const controller of readdirSync(corpus)) {
    for (const file of readdirSync(join(corpus, controller))) {
      const { request } = JSON.parse(readFileSync(join(corpus, controller, file), 'utf8'))
      if (request.children === undefined) continue
      const stamp: Stamp = { namespace: request.parent.metadata.namespace, labels: { 'controller-uid': request.parent.metadata.uid }, annotations: {} }
      for (const group of Object.values<Json>(request.children)) {
        for (const child of Object.values<Json>(group)) {
          const text = child.metadata.annotations[LAST_APPLIED_ANNOTATION]
          assert.deepEqual(unchangingAnswer(child as KubernetesObject, stamp), { answer: JSON.parse(text) }, `${file}: ${child.kind} ${child.metadata.name}`)
          children++
        }
      }
    }
  }
  assert.ok(children > 50, `${children} children`)
})

/** A running pod of the PodSet fixtures, as the API server and the kubelet made it of what Metacontroller applied. */
function pod (): Json {
  const request = fixture('podset', 'steady-state')
  return structuredClone(request.children['Pod.v1']['default/sleepers-pod-0'])
}

const STAMP: Stamp = { namespace: 'default', labels: { 'controller-uid': 'ded4ac7a-a61f-449c-a53c-458155f81cd9' }, annotations: {} }

function lastApplied (child: Json): Json {
  return JSON.parse(child.metadata.annotations[LAST_APPLIED_ANNOTATION])
}

function withLastApplied (child: Json, change: (applied: Json) => void, encode: (applied: Json) => string = goJson): Json {
  const applied = lastApplied(child)
  change(applied)
  child.metadata.annotations[LAST_APPLIED_ANNOTATION] = encode(applied)
  return child
}

function reasonFor (child: Json, stamp = STAMP): string {
  const result = unchangingAnswer(child as KubernetesObject, stamp)
  assert.ok('reason' in result, `expected no unchanging answer, got ${JSON.stringify(result).slice(0, 200)}`)
  return result.reason
}

test('what the API server and others add to a child does not count: defaults, status, a container injected beside the applied one', () => {
  const child = pod()
  assert.ok(child.spec.containers[0].terminationMessagePath !== undefined && child.status !== undefined, 'the fixture has defaults and a status')
  child.spec.containers.push({ name: 'sidecar', image: 'envoy' })
  child.metadata.labels.team = 'added by hand'
  assert.deepEqual(unchangingAnswer(child as KubernetesObject, STAMP), { answer: lastApplied(child) })
})

test('a child that differs from its last-applied configuration has no unchanging answer: Metacontroller would change it back', () => {
  const cases: Array<[string, (child: Json) => void]> = [
    ['a changed image', (child) => { child.spec.containers[0].image = 'busybox:1.37' }],
    ['a removed label', (child) => { delete child.metadata.labels.version }],
    ['a reordered command, a plain list', (child) => { child.spec.containers[0].command.reverse() }],
    ['two containers sharing the name the merge pairs them by', (child) => { child.spec.containers.push({ ...child.spec.containers[0], image: 'other' }) }],
    ['a container of another name only', (child) => { child.spec.containers[0].name = 'renamed' }]
  ]
  for (const [what, change] of cases) {
    const child = pod()
    change(child)
    assert.equal(reasonFor(child), 'Pod default/sleepers-pod-0 differs from its metacontroller.k8s.io/last-applied-configuration, so Metacontroller would change it back', what)
  }
})

test('an annotation Metacontroller would write anew, or none, leaves no unchanging answer', () => {
  const notAsWritten = 'Pod default/sleepers-pod-0\'s metacontroller.k8s.io/last-applied-configuration is not as Metacontroller writes it'
  const cases: Array<[string, Json, string | RegExp]> = [
    ['no annotation', (() => { const child = pod(); delete child.metadata.annotations[LAST_APPLIED_ANNOTATION]; return child })(),
      'Pod default/sleepers-pod-0 has no metacontroller.k8s.io/last-applied-configuration annotation'],
    ['not JSON', (() => { const child = pod(); child.metadata.annotations[LAST_APPLIED_ANNOTATION] = '{'; return child })(), /is not JSON$/],
    ['a JSON array', (() => { const child = pod(); child.metadata.annotations[LAST_APPLIED_ANNOTATION] = '[]'; return child })(), /is not an object Metacontroller applied$/],
    ['nested deeper than any stored object', withLastApplied(pod(), (applied) => { applied.spec.deep = JSON.parse('{"a":'.repeat(70) + '1' + '}'.repeat(70)) }),
      /is not an object Metacontroller applied$/],
    ['keys out of Go\'s order', withLastApplied(pod(), () => {}, (applied) => JSON.stringify(Object.fromEntries(Object.entries(applied).reverse()))), notAsWritten],
    ['an integer beyond 2^53', withLastApplied(pod(), (applied) => { applied.spec.priority = 1 }, (applied) => goJson(applied).replace('"priority":1', '"priority":9007199254740993')), notAsWritten],
    ['another object\'s', withLastApplied(pod(), (applied) => { applied.metadata.name = 'sleepers-pod-9' }), /names another object$/],
    ['without the controller-uid label Metacontroller adds', withLastApplied(pod(), (applied) => { delete applied.metadata.labels['controller-uid'] }), /lacks what Metacontroller adds to every child$/],
    ['without a namespace, which Metacontroller would default', withLastApplied(pod(), (applied) => { delete applied.metadata.namespace }), /names another object$/]
  ]
  for (const [what, child, reason] of cases) {
    if (typeof reason === 'string') assert.equal(reasonFor(child), reason, what)
    else assert.match(reasonFor(child), reason, what)
  }
})

test('a decorator\'s attachment must carry the DecoratorController\'s annotation in its last-applied configuration', () => {
  const stamp: Stamp = { ...STAMP, labels: {}, annotations: { 'metacontroller.k8s.io/decorator-controller': 'podset-decorator' } }
  assert.match(reasonFor(pod(), stamp), /lacks what Metacontroller adds to every child$/)
  const child = withLastApplied(pod(), (applied) => { applied.metadata.annotations = { 'metacontroller.k8s.io/decorator-controller': 'podset-decorator' } })
  child.metadata.annotations['metacontroller.k8s.io/decorator-controller'] = 'podset-decorator'
  assert.ok('answer' in unchangingAnswer(child as KubernetesObject, stamp))
})

test('the hook finds an unchanging answer exactly where Metacontroller\'s apply, as render --diff plans it, changes nothing', () => {
  /** A field set alike in the child and in its last-applied configuration, or, given `observed`, otherwise in the child. */
  const both = (applied: unknown, observed: unknown = applied) => (child: Json): Json => {
    child.spec.extra = structuredClone(observed)
    return withLastApplied(child, (record) => { record.spec.extra = structuredClone(applied) })
  }
  const cases: Array<[string, (child: Json) => Json]> = [
    ['as applied', (child) => child],
    ['a list keyed by a name that is null', both([{ name: null, value: 1 }])],
    ['a list keyed by a name that is true', both([{ name: true, value: 1 }])],
    ['a list keyed by ports that are no integers', both([{ port: 1.5 }, { port: 1e6 }, { port: 80 }])],
    ['a list keyed by names that are objects', both([{ name: { b: [1, 'x'], a: null } }])],
    ['a list with a name twice', both([{ name: 'a', value: 1 }, { name: 'a', value: 2 }])],
    ['a list of objects keyed by port 80 in one and "80" in the other', both([{ port: 80, value: 1 }], [{ port: '80', value: 1 }])],
    ['an object where the record has text', both('text', { a: 1 })],
    ['text where the record has an object', both({ a: 1 }, 'text')],
    ['a list where the record has an object', both({ a: 1 }, [{ a: 1 }])],
    ['an item another controller added to a keyed list', both([{ name: 'a' }], [{ name: 'a' }, { name: 'b' }])],
    ['a changed image', (child) => { child.spec.containers[0].image = 'busybox:1.37'; return child }],
    ['a reordered command', (child) => { child.spec.containers[0].command.reverse(); return child }]
  ]
  const disagreements = cases.flatMap(([what, change]) => {
    const child = change(pod()) as KubernetesObject
    const hookKeeps = 'answer' in unchangingAnswer(child, STAMP)
    const applyKeeps = isDeepStrictEqual(applyUpdate(child, lastApplied(child) as KubernetesObject), child)
    return hookKeeps === applyKeeps ? [] : [`${what}: the hook ${hookKeeps ? 'keeps' : 'changes'} it, the apply ${applyKeeps ? 'keeps' : 'changes'} it`]
  })
  assert.deepEqual(disagreements, [])
})

test('a child nested far deeper than its last-applied configuration, beside it and in its status, is kept without being copied or walked', () => {
  const child = pod()
  const deep = (): unknown => JSON.parse('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000))
  child.spec.injected = deep()
  child.status.injected = deep()
  assert.deepEqual(unchangingAnswer(child as KubernetesObject, STAMP), { answer: lastApplied(child) })
})

test('a child whose labels have integer-like keys, written by Metacontroller in Go\'s order, is answered as it is', () => {
  // A PulsarConsumer's Deployment from the corpus, whose parent also had the labels "9" and "10" (the hook copies them).
  const corpus = join(import.meta.dirname, '..', '..', 'fixtures', 'conformance', 'metacontroller-v4.17.2', 'pulsar-consumer', '003-sync-pulsarconsumer-sample-1.json')
  const { request } = JSON.parse(readFileSync(corpus, 'utf8'))
  const child = Object.values<Json>(request.children['Deployment.apps/v1'])[0] as Json
  const text: string = child.metadata.annotations[LAST_APPLIED_ANNOTATION]
  assert.equal(text.split('"labels":{"app":"pulsarconsumer",').length, 3, 'the corpus\'s annotation holds both label maps as expected')
  child.metadata.annotations[LAST_APPLIED_ANNOTATION] = text.replaceAll('"labels":{"app":"pulsarconsumer",', '"labels":{"10":"ten","9":"nine","app":"pulsarconsumer",')
  for (const labels of [child.metadata.labels, child.spec.template.metadata.labels]) Object.assign(labels, { 9: 'nine', 10: 'ten' })
  const stamp: Stamp = { namespace: request.parent.metadata.namespace, labels: { 'controller-uid': request.parent.metadata.uid }, annotations: {} }
  assert.deepEqual(unchangingAnswer(child as KubernetesObject, stamp), { answer: JSON.parse(child.metadata.annotations[LAST_APPLIED_ANNOTATION]) })
})
