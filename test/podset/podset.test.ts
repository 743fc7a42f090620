import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { FormatRegistry } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { parse } from 'yaml'
import { podSet } from '../../hooks/podset/index.js'
import { MAX_ARGUMENT_LENGTH, MAX_COMMAND_ARGUMENTS, MAX_IMAGE_LENGTH, MAX_REPLICAS, PodSetSpecSchema, podSetResource, type PodSetSpec } from '../../hooks/podset/resource.js'
import { desiredPod, podName, podSetAnswerBytes } from '../../hooks/podset/sync.js'
import { readParent } from '../../hooks/framework/parent.js'
import type { CompositeRequest, CompositeResponse, KubernetesObject } from '../../hooks/framework/wire/schemas.js'
import { build, type TestApp } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { assertGolden } from '../helpers/golden.js'
import { invalidSpecReady, lastAppliedChildren } from '../helpers/invalid-spec.js'
import { appliedPod, podSetParent, podSetRequest, syncRequest } from '../../dev/api-server/podset-requests.js'

const CASES = [
  'first-sync', 'steady-state', 'scale-up', 'scale-down', 'image-changed',
  'failed-pod', 'failed-pod-deleted', 'pod-terminating', 'parent-deleting', 'original-sample'
]

interface Answer {
  statusCode: number
  /** The response body as sent, for byte comparisons. */
  body: string
  json: CompositeResponse & { error?: string, message?: string }
}

async function sync (app: TestApp, request: unknown): Promise<Answer> {
  const response = await app.app.inject({ method: 'POST', url: '/podset/sync', payload: request as object })
  return { statusCode: response.statusCode, body: response.body, json: response.json() }
}

async function podSetApp (t: Parameters<typeof build>[0]): Promise<TestApp> {
  return await build(t, { databaseUrl: false, controllers: [podSet] })
}

function names (objects: readonly KubernetesObject[]): string[] {
  return objects.map((object) => String(object.metadata.name))
}

function podNames (parent: string, count: number): string[] {
  return Array.from({ length: count }, (_, ordinal) => `${parent}-pod-${ordinal}`)
}

function observedPods (request: CompositeRequest): KubernetesObject[] {
  return Object.values(request.children['Pod.v1'] ?? {})
}

function readyOf (response: CompositeResponse): Record<string, unknown> | undefined {
  return (response.status.conditions as Array<Record<string, unknown>>).find((c) => c.type === 'Ready')
}

test('every fixture has a golden answer', async (t) => {
  const app = await podSetApp(t)
  // The invalid-spec fixture has its golden answer in test/framework/invalid-spec.test.ts.
  const requests = readdirSync(join(import.meta.dirname, '..', 'fixtures', 'podset')).filter((f) => f.endsWith('.json') && !f.endsWith('.expected.json') && f !== 'invalid-spec.json')
  assert.deepEqual(requests.map((f) => f.replace(/\.json$/, '')).sort(), [...CASES].sort())
  for (const name of CASES) {
    await t.test(name, async () => {
      const { statusCode, json } = await sync(app, fixture('podset', name))
      assert.equal(statusCode, 200, JSON.stringify(json))
      assertGolden(json, 'podset', name)
    })
  }
})

test('children are built from the spec alone: fixed names, only fields the API server keeps as given', async (t) => {
  const app = await podSetApp(t)
  // As the API server checks a CRD's date-time fields; Kubernetes writes whole seconds.
  FormatRegistry.Set('date-time', (value) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(value))
  for (const name of CASES) {
    const { json } = await sync(app, fixture('podset', name))
    for (const child of json.children) {
      assert.deepEqual(Object.keys(child), ['apiVersion', 'kind', 'metadata', 'spec'], name)
      assert.deepEqual(Object.keys(child.metadata), ['name', 'namespace', 'labels'], name)
      assert.match(String(child.metadata.name), /-pod-\d+$/, name)
    }
    assert.deepEqual(Object.keys(json.status).filter((key) => !(key in podSetResource.statusSchema.properties)), [], `${name}: status fields the CRD would prune`)
    assert.ok(Value.Check(podSetResource.statusSchema, json.status), `${name}: status fits the CRD's status schema`)
  }
})

test('a second sync over the applied children returns byte-identical children and status', async (t) => {
  const app = await podSetApp(t)
  const request = fixture<CompositeRequest>('podset', 'first-sync')
  const first = await sync(app, request)
  const observed = first.json.children.map((child) => appliedPod(request.parent, child))

  // What Metacontroller would apply next equals what it applied: its 3-way merge changes nothing, so no pod is recreated.
  for (const pod of observed) {
    const lastApplied = JSON.parse(String(pod.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration']))
    const desired = first.json.children.find((child) => child.metadata.name === pod.metadata.name)
    assert.deepEqual(lastApplied, { ...desired, metadata: { ...desired?.metadata, labels: { ...desired?.metadata.labels, 'controller-uid': request.parent.metadata.uid } } })
  }

  const second = await sync(app, syncRequest({ ...request.parent, status: first.json.status }, observed))
  assert.equal(JSON.stringify(second.json.children), JSON.stringify(first.json.children))
  assert.equal(readyOf(second.json)?.status, 'True')
  const third = await sync(app, syncRequest({ ...request.parent, status: second.json.status }, observed))
  assert.equal(third.body, second.body)

  const steady = fixture<CompositeRequest>('podset', 'steady-state')
  const resync = await sync(app, steady)
  assert.equal(JSON.stringify(resync.json.status), JSON.stringify(steady.parent.status), 'the steady state answers the status it already has')
  assert.equal(JSON.stringify(resync.json.children), JSON.stringify(first.json.children))
})

test('a scale-down removes the highest ordinals, and pods above the replicas are not counted', async (t) => {
  const app = await podSetApp(t)
  const { json } = await sync(app, fixture('podset', 'scale-down'))
  assert.deepEqual(names(json.children), ['sleepers-pod-0'])
  assert.equal(json.status.readyReplicas, 1)
  assert.equal(readyOf(json)?.status, 'True')

  const partial = await sync(app, podSetRequest({ replicas: 3, observed: 7 }))
  assert.deepEqual(names(partial.json.children), podNames('sleepers', 3))
  assert.deepEqual(partial.json.status.podNames, podNames('sleepers', 3))

  const up = await sync(app, fixture('podset', 'scale-up'))
  assert.deepEqual(names(up.json.children), podNames('sleepers', 5))
  assert.deepEqual(up.json.status.podNames, podNames('sleepers', 3))
})

test('a terminal pod is left out of one answer and comes back once it is gone', async (t) => {
  const app = await podSetApp(t)
  const failed = await sync(app, fixture('podset', 'failed-pod'))
  assert.deepEqual(names(failed.json.children), ['sleepers-pod-0', 'sleepers-pod-2'])
  assert.equal(failed.json.status.readyReplicas, 2)

  const gone = await sync(app, fixture('podset', 'failed-pod-deleted'))
  const fresh = await sync(app, fixture('podset', 'first-sync'))
  assert.equal(JSON.stringify(gone.json.children), JSON.stringify(fresh.json.children), 'pod-1 comes back exactly as first created')

  const succeeded = fixture<CompositeRequest>('podset', 'steady-state')
  const pod0 = succeeded.children['Pod.v1']?.['default/sleepers-pod-0'] as { status: { phase: string } }
  pod0.status.phase = 'Succeeded'
  assert.deepEqual(names((await sync(app, succeeded)).json.children), ['sleepers-pod-1', 'sleepers-pod-2'])
})

test('terminating pods stay desired but are not counted; Pending pods are', async (t) => {
  const app = await podSetApp(t)
  const terminating = await sync(app, fixture('podset', 'pod-terminating'))
  assert.deepEqual(names(terminating.json.children), podNames('sleepers', 3))
  assert.equal(terminating.json.status.readyReplicas, 2)
  assert.deepEqual(terminating.json.status.podNames, ['sleepers-pod-0', 'sleepers-pod-1'])
  assert.equal(readyOf(terminating.json)?.status, 'False')

  const deleting = await sync(app, fixture('podset', 'parent-deleting'))
  assert.equal(deleting.json.status.readyReplicas, 0)
  assert.equal(readyOf(deleting.json)?.reason, 'Deleting')

  const pending = await sync(app, podSetRequest({ replicas: 3, phase: 'Pending' }))
  assert.equal(pending.json.status.readyReplicas, 3)
})

test('the original sample, as written, gets the defaults: one busybox pod sleeping 3600 s', async (t) => {
  const app = await podSetApp(t)
  const request = fixture<CompositeRequest>('podset', 'original-sample')
  const expected = (await sync(app, request)).body
  for (const spec of [{}, null, undefined]) {
    const { spec: _, ...parent } = request.parent
    assert.equal((await sync(app, { ...request, parent: spec === undefined ? parent : { ...parent, spec } })).body, expected, `spec ${JSON.stringify(spec)}`)
  }

  const example = parse(readFileSync(join(import.meta.dirname, '..', '..', 'manifests', 'examples', 'podset.yaml'), 'utf8')) as KubernetesObject
  const { json } = await sync(app, syncRequest(example, []))
  assert.deepEqual(json.children, [{
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'podset-sample-pod-0',
      labels: {
        app: 'podset-sample',
        version: 'v0.1',
        'app.kubernetes.io/name': 'podset',
        'app.kubernetes.io/instance': 'podset-sample',
        'app.kubernetes.io/component': 'pod',
        'app.kubernetes.io/managed-by': 'metacontroller-hooks'
      }
    },
    spec: { containers: [{ name: 'busybox', image: 'busybox', command: ['sleep', '3600'] }] }
  }])
})

test('a spec the hook cannot interpret gets Ready=False InvalidSpec naming the field, and the pods kept as they are', async (t) => {
  // With a HOOKS_BODY_LIMIT of 64Ki, a request is scanned before it is parsed, and the pods' specs, which the hook does
  // not read, are left out of its parse: the answer reads them from the body again.
  const apps = [await podSetApp(t), await build(t, { databaseUrl: false, controllers: [podSet], env: { HOOKS_BODY_LIMIT: '64Ki' } })]
  const cases: Array<[unknown, RegExp]> = [
    [{ replicas: -1 }, /spec\.replicas: Expected integer to be greater or equal to 0/],
    [{ replicas: 'three' }, /spec\.replicas: Expected integer/],
    [{ replicas: 1.5 }, /spec\.replicas: Expected integer/],
    [{ replicas: 2001 }, /spec\.replicas: Expected integer to be less or equal to 2000/],
    [{ command: 'sleep 3600' }, /spec\.command: Expected array/],
    [{ command: ['sleep', 3600] }, /spec\.command\.1: Expected string/],
    [{ command: [] }, /spec\.command: Expected array length to be greater or equal to 1/],
    [{ image: 'busy box' }, /spec\.image: Expected string to match/],
    // Stored before the CRD bounded them: a pod of each asked for 20 KB.
    [{ command: ['sh', '-c', 'x'.repeat(20_000)] }, /spec\.command\.2: Expected string length less or equal to 96/],
    [{ command: Array.from({ length: 5 }, () => 'x') }, /spec\.command: Expected array length to be less or equal to 4/],
    [{ image: `registry.example.com/${'i'.repeat(500)}` }, /spec\.image: Expected string length less or equal to 255/]
  ]
  for (const app of apps) {
    for (const [spec, message] of cases) {
      const request = fixture<CompositeRequest>('podset', 'steady-state')
      request.parent.spec = spec
      const { statusCode, json } = await sync(app, request)
      const ready = invalidSpecReady(statusCode, json, `${app.config.bodyLimit}: ${JSON.stringify(spec)}`)
      assert.match(String(ready.message), message)
      assert.match(String(ready.message), /^PodSet spec cannot be used: .*until then the hook changes nothing it manages\.$/)
      assert.deepEqual(json.children, lastAppliedChildren(request))
    }
  }
})

test('a name too long for the pods\' app label gets 422 saying why', async (t) => {
  const app = await podSetApp(t)
  const longName = 'a'.repeat(64)
  const { statusCode, json } = await sync(app, syncRequest(podSetParent({ name: longName, spec: { replicas: 1 } }), []))
  assert.equal(statusCode, 422)
  assert.match(String(json.message), /^PodSet name "a{64}" is 64 characters long, but at most 63 characters fit: its pods carry it in their app label/)
})

test('a PodSet with 2,000 observed pods answers every pod, in ordinal order', async (t) => {
  const app = await podSetApp(t)
  const steady = podSetRequest({ replicas: 2000 })
  assert.equal(observedPods(steady).length, 2000)
  const expected = podNames('sleepers', 2000)

  const resync = await sync(app, steady)
  assert.equal(resync.statusCode, 200)
  assert.deepEqual(names(resync.json.children), expected)
  assert.equal(resync.json.status.readyReplicas, 2000)
  assert.deepEqual(resync.json.status.podNames, expected, 'numeric order: pod-2 before pod-10')
  assert.equal(JSON.stringify(resync.json.status), JSON.stringify(steady.parent.status))

  const troubled = podSetRequest({ replicas: 1500, observed: 2000 })
  const pods = troubled.children['Pod.v1'] as Record<string, { metadata: Record<string, unknown>, status: { phase: string } }>
  ;(pods['default/sleepers-pod-1234'] as { status: { phase: string } }).status.phase = 'Failed'
  ;(pods['default/sleepers-pod-17'] as { metadata: Record<string, unknown> }).metadata.deletionTimestamp = '2026-11-22T11:59:00Z'
  const { statusCode, json } = await sync(app, troubled)
  assert.equal(statusCode, 200)
  assert.deepEqual(names(json.children), podNames('sleepers', 1500).filter((name) => name !== 'sleepers-pod-1234'))
  assert.equal(json.status.readyReplicas, 1498)
  assert.deepEqual(json.status.podNames, podNames('sleepers', 1500).filter((name) => name !== 'sleepers-pod-1234' && name !== 'sleepers-pod-17'))
  assert.match(String(readyOf(json)?.message), /^1498\/1500 pods are running or pending; waiting for sleepers-pod-17, sleepers-pod-1234$/)
})

test('an answer\'s foreseen size is what its last pod and that pod\'s name take written, for any spec the hook accepts', () => {
  // Every character a spec may hold, so that a schema that let in one JSON escapes would fail here.
  const accepted = (schema: Parameters<typeof Value.Check>[0]): string => Array.from({ length: 0x250 }, (_, code) => String.fromCharCode(code)).filter((character) => Value.Check(schema, character)).join('')
  const imageCharacters = accepted(PodSetSpecSchema.properties.image)
  const argumentCharacters = accepted(PodSetSpecSchema.properties.command.items)
  const specs: PodSetSpec[] = [
    { replicas: 1, image: 'busybox', command: ['sleep', '3600'] },
    { replicas: 10, image: imageCharacters.slice(0, MAX_IMAGE_LENGTH), command: [argumentCharacters.slice(0, MAX_ARGUMENT_LENGTH)] },
    { replicas: MAX_REPLICAS, image: imageCharacters.slice(-5), command: Array.from({ length: MAX_COMMAND_ARGUMENTS }, (_, index) => argumentCharacters.slice(index * 20, index * 20 + MAX_ARGUMENT_LENGTH)) },
    { replicas: 101, image: 'b', command: [''] }
  ]
  for (const spec of specs) {
    for (const [name, namespace] of [['a', 'default'], ['a'.repeat(63), 'n'.repeat(63)], ['web-1', undefined]] as const) {
      const object = podSetParent({ name, namespace, spec })
      if (namespace === undefined) delete object.metadata.namespace
      const parent = readParent(podSetResource, object, 'parent')
      const last = spec.replicas - 1
      const written = JSON.stringify(desiredPod(parent, spec, last)).length + podName(name, last).length + 3
      assert.equal(podSetAnswerBytes(parent), spec.replicas * written, `${spec.replicas} pods of ${name} in ${namespace ?? 'no namespace'}`)
    }
  }
})
