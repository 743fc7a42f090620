import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from '@sinclair/typebox'
import fc from 'fast-check'
import { answerPassing, jsonBytes } from '../../hooks/framework/answer-budget.js'
import { hookContext, type CompositeController } from '../../hooks/framework/controller.js'
import { customResource } from '../../hooks/framework/custom-resource.js'
import type { CompositeRequest } from '../../hooks/framework/wire/schemas.js'
import { podSet } from '../../hooks/podset/index.js'
import { podSetResource } from '../../hooks/podset/resource.js'
import { syncPodSet } from '../../hooks/podset/sync.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { lastAppliedChildren } from '../helpers/invalid-spec.js'

type Json = Record<string, any>

/** Any UTF-16 code unit, lone surrogates and control characters included. */
const anyText = fc.string({ unit: fc.nat(0xffff).map((code) => String.fromCharCode(code)), maxLength: 40 })

/** JSON values with any text, and the values JSON.stringify leaves out of objects and writes as null in lists. */
const { value: anyValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    anyText, fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(anyText, tie('value'), { maxKeys: 6 })
  )
}))

test('jsonBytes is the size of JSON.stringify in UTF-8, for any value within the budget', () => {
  fc.assert(fc.property(anyValue.filter((value) => value !== undefined), (value) => {
    const bytes = Buffer.byteLength(JSON.stringify(value))
    assert.equal(jsonBytes(value, bytes), bytes)
    assert.equal(jsonBytes(value, bytes - 1), Infinity)
  }), { numRuns: 2000 })
})

test('jsonBytes stops once past the budget, whatever the value would be written as', () => {
  // A terabyte of JSON: a thousand lists of the same thousand references to one megabyte of text.
  const megabyte = 'x'.repeat(1_000_000)
  const inner = Array.from({ length: 1000 }, () => megabyte)
  assert.equal(jsonBytes(Array.from({ length: 1000 }, () => inner), 16 * 1024 * 1024), Infinity)
  // A value that refers to itself, which JSON.stringify refuses.
  const cycle: Json = { name: 'loop' }
  cycle.self = [cycle]
  assert.equal(jsonBytes(cycle, 1_000_000), Infinity)
})

test('where an answer passes the budget: at which of its children, and about how large it would be', () => {
  const child = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p'.repeat(90) } }
  const answer = { status: { ready: true }, children: Array.from({ length: 1000 }, () => child) }
  const bytes = Buffer.byteLength(JSON.stringify(answer))
  assert.equal(answerPassing(answer, bytes), undefined)
  const budget = Math.floor(bytes / 4)
  const passed = answerPassing(answer, budget)
  // The first child that takes the answer past the budget, counted by writing the answer with more and more children.
  const first = answer.children.findIndex((_, index) => JSON.stringify({ ...answer, children: answer.children.slice(0, index + 1) }).length > budget) + 1
  assert.deepEqual([passed?.child, passed?.children], [first, 1000])
  assert.ok(Math.abs((passed?.estimate ?? 0) - bytes) < bytes / 100, `${passed?.estimate} for ${bytes}`)
  const inStatus = answerPassing({ status: { message: 'm'.repeat(200) }, children: [child] }, 100)
  assert.deepEqual([inStatus?.child, inStatus?.children], [undefined, 1])
})

test('an answer over the budget is not sent: Ready=False AnswerTooLarge naming the bound, every child kept as it is', async (t) => {
  const { app } = await build(t, { databaseUrl: false, controllers: [podSet], env: { HOOKS_BODY_LIMIT: '64Ki' } })
  const request = fixture('podset', 'steady-state')
  request.parent.spec.replicas = 2000
  request.parent.metadata.generation = 2
  const response = await app.inject({ method: 'POST', url: '/podset/sync', payload: request })
  assert.equal(response.statusCode, 200)
  const answer = response.json()
  const ready = answer.status.conditions[0]
  assert.deepEqual([ready.status, ready.reason], ['False', 'AnswerTooLarge'])
  assert.match(ready.message, /^PodSet spec asks for an answer larger than the hook sends: it passes 65536 bytes \(HOOKS_BODY_LIMIT, the most an answer may be\) by its \d+(st|nd|rd|th) child of 2000, about \d+ KB in all\. Change the spec to ask for fewer or smaller children, or raise HOOKS_BODY_LIMIT and the hook server's memory limit with it; until then the hook changes nothing it manages\.$/)
  assert.deepEqual(answer.children, lastAppliedChildren(request))
  assert.deepEqual([answer.status.readyReplicas, answer.status.podNames], [request.parent.status.readyReplicas, request.parent.status.podNames], 'the status still says what the pods are')
  assert.equal(answer.status.observedGeneration, 2)
  // What it would have been: the estimate is near.
  const unbounded = syncPodSet(request as CompositeRequest, hookContext(podSet, request.parent, '2026-11-22T12:00:00Z', {}))
  const estimate = Number(/about (\d+) KB/.exec(ready.message)?.[1]) * 1000
  const size = Buffer.byteLength(JSON.stringify(unbounded))
  assert.ok(Math.abs(estimate - size) < size / 10, `about ${estimate} for ${size}`)
})

/** PodSet's resource, without the bounds of its spec. */
const unboundedResource = customResource({
  group: podSetResource.group,
  version: podSetResource.version,
  kind: podSetResource.kind,
  spec: Type.Object({ replicas: Type.Integer(), image: Type.String(), command: Type.Array(Type.String()) }),
  status: {},
  printerColumns: []
})

/** Runs `work`, and gives back with its result the length of the longest text JSON.stringify made meanwhile. */
async function longestJson<T> (work: () => Promise<T>): Promise<[T, number]> {
  const stringify = JSON.stringify
  let longest = 0
  JSON.stringify = ((...args: Parameters<typeof stringify>) => {
    const text = stringify(...args)
    longest = Math.max(longest, text?.length ?? 0)
    return text
  }) as typeof stringify
  try {
    return [await work(), longest]
  } finally {
    JSON.stringify = stringify
  }
}

for (const [foresight, answerBytes] of [['foreseen by its controller', podSet.answerBytes], ['that its controller does not foresee', undefined]] as const) {
  test(`a controller whose schema leaves its answer unbounded still gets the budget: the 207 MB answer of a 21 KB request, ${foresight}, is never built into text`, async (t) => {
    const unbounded: CompositeController<any> = { ...podSet, resource: unboundedResource, answerBytes }
    const { app } = await build(t, { databaseUrl: false, controllers: [unbounded] })
    const request = fixture('podset', 'first-sync')
    request.parent.spec = { replicas: 10_000, image: 'busybox', command: ['sh', '-c', `echo ${'x'.repeat(20_000)}`] }
    const [response, longest] = await longestJson(async () => await app.inject({ method: 'POST', url: '/podset/sync', payload: request }))
    assert.equal(response.statusCode, 200)
    const ready = response.json().status.conditions[0]
    assert.deepEqual([ready.status, ready.reason], ['False', 'AnswerTooLarge'])
    assert.match(ready.message, /it passes 16777216 bytes \(HOOKS_BODY_LIMIT, the most an answer may be\) by its 8\d\d(st|nd|rd|th) child of 10000, about 20\d MB in all\./)
    assert.deepEqual(response.json().children, [])
    assert.ok(longest < 16 * 1024 * 1024, `JSON.stringify wrote ${longest} characters, over the answer budget`)
  })
}
