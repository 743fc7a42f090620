import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { bookStore } from '../../hooks/bookstore/index.js'
import type { CompositeController, Controller } from '../../hooks/framework/controller.js'
import { podSet } from '../../hooks/podset/index.js'
import { syncPodSet } from '../../hooks/podset/sync.js'
import { pulsarConsumer } from '../../hooks/pulsar-consumer/index.js'
import { kubernetesTime } from '../../hooks/framework/wire/conditions.js'
import { LAST_APPLIED_ANNOTATION } from '../../hooks/framework/wire/apply.js'
import { build, NOW } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { assertGolden } from '../helpers/golden.js'
import { invalidSpecReady, lastAppliedChildren } from '../helpers/invalid-spec.js'

type Json = Record<string, any>

const COMPOSITES: readonly Controller[] = [bookStore, podSet, pulsarConsumer]

/** Each composite's fixture of a parent whose stored spec the hook cannot interpret, its children as the valid spec left them. */
const CASES = [
  { controller: 'bookstore', name: 'invalid-spec', steady: 'steady-state', fields: ['spec.bookApp.serviceType', 'spec.bookDB.replicas'] },
  { controller: 'podset', name: 'invalid-spec', steady: 'steady-state', fields: ['spec.replicas', 'spec.image'] },
  { controller: 'pulsar-consumer', name: 'sync-invalid-spec-after-steady', steady: 'sync-steady', fields: ['spec.serverAddress', 'spec.topic'] }
]

async function post (t: TestContext, url: string, body: unknown, controllers = COMPOSITES): Promise<{ statusCode: number, body: string, json: Json }> {
  const { app } = await build(t, { databaseUrl: false, controllers })
  const response = await app.inject({ method: 'POST', url, payload: body as object })
  return { statusCode: response.statusCode, body: response.body, json: response.json() }
}

/** The first observed child of `kind` in a request. */
function observed (request: Json, kind: string): Json {
  const group = Object.entries(request.children as Json).find(([key]) => key.startsWith(`${kind}.`))?.[1] as Json | undefined
  const child = Object.values(group ?? {})[0]
  assert.ok(child !== undefined, `the request observes a ${kind}`)
  return child
}

for (const { controller, name, steady, fields } of CASES) {
  test(`${controller} ${name}: Ready=False, reason InvalidSpec naming each bad field, and every child answered as Metacontroller last applied it`, async (t) => {
    const request = fixture(controller, name)
    const { statusCode, json } = await post(t, `/${controller}/sync`, request)
    const ready = invalidSpecReady(statusCode, json, name)
    for (const field of fields) assert.ok(ready.message.includes(`${field}:`), `${field} in ${ready.message}`)
    assert.deepEqual(json.children, lastAppliedChildren(request))
    assert.ok(json.children.length > 0)
    assert.equal(json.status.observedGeneration, request.parent.metadata.generation)
    assertGolden(json, controller, name)
  })

  test(`${controller} ${name}: a resync over the written status answers the same bytes`, async (t) => {
    const request = fixture(controller, name)
    const first = await post(t, `/${controller}/sync`, request)
    invalidSpecReady(first.statusCode, first.json, name)
    const second = await post(t, `/${controller}/sync`, { ...request, parent: { ...request.parent, status: first.json.status } })
    assert.equal(second.body, first.body)
  })

  test(`${controller} ${name}: fixing the spec resumes normal work, the Ready transition dated`, async (t) => {
    const invalid = fixture(controller, name)
    const answered = await post(t, `/${controller}/sync`, invalid)
    invalidSpecReady(answered.statusCode, answered.json, name)
    const stored = answered.json.status
    const fixed = fixture(controller, steady)
    const expected = (await post(t, `/${controller}/sync`, fixed)).json
    fixed.parent.metadata.generation = invalid.parent.metadata.generation + 1
    fixed.parent.status = stored
    const { statusCode, json } = await post(t, `/${controller}/sync`, fixed)
    assert.equal(statusCode, 200)
    assert.deepEqual(json.children, expected.children)
    const ready = json.status.conditions[0]
    assert.deepEqual([ready.status, ready.reason, ready.lastTransitionTime], ['True', expected.status.conditions[0].reason, kubernetesTime(NOW)])
  })
}

test('a parent that never had children: Ready=False InvalidSpec, and no child', async (t) => {
  const { statusCode, json } = await post(t, '/pulsar-consumer/sync', fixture('pulsar-consumer', 'sync-invalid-spec'))
  invalidSpecReady(statusCode, json)
  assert.deepEqual(json.children, [])
})

test('a child without the last-applied annotation: 422 naming the bad fields and the child, for no answer would keep it as it is', async (t) => {
  const request = fixture('podset', 'invalid-spec')
  delete observed(request, 'Pod').metadata.annotations[LAST_APPLIED_ANNOTATION]
  const { statusCode, json } = await post(t, '/podset/sync', request)
  assert.equal(statusCode, 422)
  assert.equal(json.error, 'Unprocessable Entity')
  assert.match(json.message, /^PodSet spec cannot be used: spec\.replicas: .*; spec\.image: .* The status cannot say so, as no answer would leave every child as it is: Pod default\/sleepers-pod-0 has no metacontroller\.k8s\.io\/last-applied-configuration annotation\.$/)
})

test('a child changed behind Metacontroller\'s back: 422, since answering its last-applied configuration would change it back', async (t) => {
  const request = fixture('pulsar-consumer', 'sync-invalid-spec-after-steady')
  // As `kubectl scale` leaves it.
  observed(request, 'Deployment').spec.replicas = 4
  const { statusCode, json } = await post(t, '/pulsar-consumer/sync', request)
  assert.equal(statusCode, 422)
  assert.match(json.message, /Deployment default\/pulsarconsumer-sample-1-deployment differs from its metacontroller\.k8s\.io\/last-applied-configuration, so Metacontroller would change it back\.$/)
})

test('a child being deleted is left out of the answer: Metacontroller neither deletes nor updates such a child', async (t) => {
  const request = fixture('podset', 'invalid-spec')
  const pod = observed(request, 'Pod')
  pod.metadata.deletionTimestamp = '2026-11-22T11:59:00Z'
  delete pod.metadata.annotations[LAST_APPLIED_ANNOTATION]
  const { statusCode, json } = await post(t, '/podset/sync', request)
  invalidSpecReady(statusCode, json)
  assert.deepEqual(json.children.map((child: Json) => child.metadata.name), ['sleepers-pod-1', 'sleepers-pod-2'])
})

test('children whose labels have integer-like keys ("9", "10"), as Metacontroller writes them, are kept by the InvalidSpec answer', async (t) => {
  // A real PulsarConsumer sync of the corpus, its parent labelled "9" and "10" (which the hook copies to the
  // Deployment), and its spec broken since.
  const { request } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'conformance', 'metacontroller-v4.17.2', 'pulsar-consumer', '003-sync-pulsarconsumer-sample-1.json'), 'utf8'))
  const integerLike = { 9: 'nine', 10: 'ten' }
  Object.assign(request.parent.metadata.labels, integerLike)
  const deployment = observed(request, 'Deployment')
  for (const labels of [deployment.metadata.labels, deployment.spec.template.metadata.labels]) Object.assign(labels, integerLike)
  const text: string = deployment.metadata.annotations[LAST_APPLIED_ANNOTATION]
  // Go's encoding/json writes map keys in byte order: "10" before "9", both before "app".
  deployment.metadata.annotations[LAST_APPLIED_ANNOTATION] = text.replaceAll('"labels":{"app":', '"labels":{"10":"ten","9":"nine","app":')
  delete request.parent.spec.topic
  const { statusCode, json } = await post(t, '/pulsar-consumer/sync', request)
  const ready = invalidSpecReady(statusCode, json)
  assert.match(ready.message, /spec\.topic: /)
  assert.deepEqual(json.children, lastAppliedChildren(request))
})

test('a CompositeController that does not generate its selector: 422, as the labels Metacontroller requires are not known', async (t) => {
  const request = fixture('bookstore', 'invalid-spec')
  request.controller.spec.generateSelector = false
  const { statusCode, json } = await post(t, '/bookstore/sync', request)
  assert.equal(statusCode, 422)
  assert.match(json.message, /the CompositeController does not generate its selector \(spec\.generateSelector\)/)
})

test('a finalize hook that finds the spec unusable answers InvalidSpec and finalized: false, so the finalizer stays', async (t) => {
  const withFinalize: CompositeController<any, any> = {
    ...podSet,
    name: 'finalizing-podset',
    hooks: { sync: syncPodSet, finalize: (request, context) => ({ ...syncPodSet(request, context), finalized: true }) }
  }
  const request = { ...fixture('podset', 'invalid-spec'), finalizing: true }
  const { statusCode, json } = await post(t, '/finalizing-podset/finalize', request, [withFinalize])
  invalidSpecReady(statusCode, json)
  assert.equal(json.finalized, false)
  assert.deepEqual(json.children, lastAppliedChildren(request))
})

test('PostgresWriter: Ready=False InvalidSpec naming each bad field, no SQL, and the row left as it is until the spec is fixed', async (t) => {
  const { app, pool, schema } = await build(t)
  const sync = async (body: Json, hook = 'sync'): Promise<Json> => {
    const response = await app.inject({ method: 'POST', url: `/postgres-writer/${hook}`, payload: body })
    assert.equal(response.statusCode, 200, response.body)
    return response.json()
  }
  const row = async (): Promise<unknown> => (await (pool as pg.Pool).query(`SELECT *, xmin::text AS xmin FROM "${schema}".students`)).rows
  const created = await sync(fixture('postgres-writer', 'sync-create'))
  const before = await row()

  const invalid = fixture('postgres-writer', 'sync-resync')
  invalid.object.status = created.status
  invalid.object.metadata.generation = 2
  invalid.object.spec.age = 'twenty'
  delete invalid.object.spec.country
  const answer = await sync(invalid)
  const ready = invalidSpecReady(200, answer)
  assert.match(ready.message, /^PostgresWriter spec cannot be used: spec\.country: Expected required property; spec\.age: Expected integer\./)
  assert.deepEqual(answer.attachments, [])
  assert.deepEqual([answer.status.table, answer.status.id], [created.status.table, created.status.id], 'the status still says where the row is')
  assert.deepEqual(await row(), before, 'the row was not written')

  const finalize = fixture('postgres-writer', 'finalize')
  finalize.object.spec = invalid.object.spec
  finalize.object.status = answer.status
  assert.equal((await sync(finalize, 'finalize')).finalized, true, 'a finalize needs no spec: the object can still go')
  assert.deepEqual(await row(), [])
})

test('PostgresWriter: text a PostgreSQL column cannot hold is InvalidSpec too, each such field named', async (t) => {
  const { app } = await build(t)
  const request = fixture('postgres-writer', 'sync-create')
  request.object.spec.name = 'al\u0000ex'
  request.object.spec.country = 'x\ud800y'
  const response = await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: request })
  const ready = invalidSpecReady(response.statusCode, response.json())
  assert.equal(ready.message, 'PostgresWriter spec cannot be used: spec.name: contains a NUL character, which a PostgreSQL text column cannot hold; spec.country: contains an unpaired UTF-16 surrogate, which a PostgreSQL text column cannot hold. Fix the custom resource; until then the hook changes nothing it manages.')
})
