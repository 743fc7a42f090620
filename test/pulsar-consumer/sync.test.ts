import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pulsarConsumer } from '../../hooks/pulsar-consumer/index.js'
import { pulsarConsumerResource } from '../../hooks/pulsar-consumer/resource.js'
import { ConditionSchema } from '../../hooks/framework/wire/schemas.js'
import { appliedChildren } from '../../dev/api-server/apply.js'
import { build, type TestApp } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { assertGolden } from '../helpers/golden.js'

type Json = Record<string, any>

const SYNC_CASES = [
  'sync-first',
  'sync-steady',
  'sync-scale-up',
  'sync-scale-up-pods-starting',
  'sync-scale-down',
  'sync-scaled-to-zero',
  'sync-spec-changed',
  'sync-labels-changed',
  'sync-no-labels',
  'sync-reserved-labels',
  'sync-long-name',
  'sync-deleting'
]

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

async function app (t: Parameters<typeof build>[0]): Promise<TestApp> {
  return await build(t, { databaseUrl: false, controllers: [pulsarConsumer] })
}

async function sync (t: TestApp, body: unknown): Promise<{ statusCode: number, json: Json }> {
  const response = await t.app.inject({ method: 'POST', url: '/pulsar-consumer/sync', payload: body as object })
  return { statusCode: response.statusCode, json: response.json() }
}

async function answer (t: TestApp, body: unknown): Promise<Json> {
  const { statusCode, json } = await sync(t, body)
  assert.equal(statusCode, 200, JSON.stringify(json))
  return json
}

function deploymentOf (response: Json): Json {
  assert.equal(response.children.length, 1)
  return response.children[0]
}

/**
 * The next request after Metacontroller applied `response`: its status stored (with observedGeneration
 * injected), and its Deployment as the API server returns it once rolled out and ready.
 */
function afterApply (request: Json, response: Json, resourceVersion: string): Json {
  return {
    ...request,
    parent: {
      ...request.parent,
      metadata: { ...request.parent.metadata, resourceVersion },
      status: { ...response.status, observedGeneration: request.parent.metadata.generation }
    },
    children: appliedChildren(request.parent, response.children, request.children, { time: '2026-11-22T12:00:20Z', resourceVersion })
  }
}

for (const name of SYNC_CASES) {
  test(`${name}: the answer is the golden one`, async (t) => {
    const json = await answer(await app(t), fixture('pulsar-consumer', name))
    assertGolden(json, 'pulsar-consumer', name)
  })
}

test('steady state: the answer carries the observed status byte for byte', async (t) => {
  const request = fixture('pulsar-consumer', 'sync-steady')
  const json = await answer(await app(t), request)
  assert.equal(JSON.stringify(json.status), JSON.stringify(request.parent.status))
  assert.equal(json.status.conditions[0].status, 'True')
})

test('no churn: once applied, the children stay byte-identical and the status settles after one more sync', async (t) => {
  const hooks = await app(t)
  for (const name of SYNC_CASES.filter((c) => c !== 'sync-deleting')) {
    const first = fixture('pulsar-consumer', name)
    const firstAnswer = await answer(hooks, first)
    const second = afterApply(first, firstAnswer, '9001')
    const secondAnswer = await answer(hooks, second)
    assert.equal(JSON.stringify(secondAnswer.children), JSON.stringify(firstAnswer.children), `${name}: children changed after apply`)
    assert.equal(secondAnswer.status.conditions[0].status, 'True', `${name}: ${secondAnswer.status.conditions[0].message}`)
    const third = afterApply(second, secondAnswer, '9002')
    const thirdAnswer = await answer(hooks, third)
    assert.equal(JSON.stringify(thirdAnswer), JSON.stringify(secondAnswer), `${name}: the answer changed over an unchanged cluster`)
    assert.deepEqual(third.parent.status, thirdAnswer.status, `${name}: Metacontroller would write the status again`)
  }
})

test('the selector depends on the parent name only: relabelling the parent never changes it', async (t) => {
  const hooks = await app(t)
  const steady = fixture('pulsar-consumer', 'sync-steady')
  const observedSelector = (Object.values(steady.children['Deployment.apps/v1'])[0] as Json).spec.selector
  const selectors = []
  for (const labels of [undefined, {}, { app: 'pulsarconsumer' }, { app: 'orders-consumer', team: 'payments' }, { pulsarcrd: 'mine' }, { tier: 'backend', 'example.com/owner': 'team-a' }]) {
    const request = fixture('pulsar-consumer', 'sync-steady')
    if (labels === undefined) delete request.parent.metadata.labels
    else request.parent.metadata.labels = labels
    const deployment = deploymentOf(await answer(hooks, request))
    selectors.push(deployment.spec.selector)
    for (const [key, value] of Object.entries(deployment.spec.selector.matchLabels)) {
      assert.equal(deployment.spec.template.metadata.labels[key], value, 'the selector matches the pod template')
    }
  }
  for (const selector of selectors) assert.deepEqual(selector, observedSelector)
  assert.deepEqual(observedSelector, { matchLabels: { pulsarcrd: 'pulsarconsumer-sample-1-pulsarcrd' } })
})

test('changed parent labels reach the Deployment and its pods, and the old ones go', async (t) => {
  const json = await answer(await app(t), fixture('pulsar-consumer', 'sync-labels-changed'))
  const deployment = deploymentOf(json)
  const expected = { app: 'orders-consumer', pulsarcrd: 'pulsarconsumer-sample-1-pulsarcrd', team: 'payments' }
  assert.deepEqual(deployment.metadata.labels, expected)
  assert.deepEqual(deployment.spec.template.metadata.labels, expected)
  assert.deepEqual(deployment.spec.selector, { matchLabels: { pulsarcrd: 'pulsarconsumer-sample-1-pulsarcrd' } })
})

test('a parent without labels works: the Deployment carries only the selector label', async (t) => {
  const request = fixture('pulsar-consumer', 'sync-no-labels')
  assert.equal(request.parent.metadata.labels, undefined)
  const deployment = deploymentOf(await answer(await app(t), request))
  assert.deepEqual(deployment.metadata.labels, { pulsarcrd: 'pulsarconsumer-sample-1-pulsarcrd' })
  assert.deepEqual(deployment.spec.template.metadata.labels, { pulsarcrd: 'pulsarconsumer-sample-1-pulsarcrd' })
})

test('parent labels owned by Metacontroller, the Deployment controller or the hook are not copied', async (t) => {
  const request = fixture('pulsar-consumer', 'sync-reserved-labels')
  const deployment = deploymentOf(await answer(await app(t), request))
  for (const labels of [deployment.metadata.labels, deployment.spec.template.metadata.labels]) {
    assert.deepEqual(labels, { app: 'pulsarconsumer', pulsarcrd: 'pulsarconsumer-sample-1-pulsarcrd' })
  }
})

test('long parent names still give valid, stable and distinct label values and names', async (t) => {
  const hooks = await app(t)
  const request = fixture('pulsar-consumer', 'sync-long-name')
  const first = deploymentOf(await answer(hooks, request))
  const value = first.spec.selector.matchLabels.pulsarcrd
  assert.ok(value.length <= 63 && LABEL_VALUE.test(value), value)
  assert.ok(value.startsWith('payments-ledger-settlement-events-consumer') && value.endsWith('-pulsarcrd'), value)
  assert.equal(deploymentOf(await answer(hooks, request)).spec.selector.matchLabels.pulsarcrd, value)

  const sibling = fixture('pulsar-consumer', 'sync-long-name')
  sibling.parent.metadata.name = 'payments-ledger-settlement-events-consumer-eu-west-1-standby'
  assert.notEqual(deploymentOf(await answer(hooks, sibling)).spec.selector.matchLabels.pulsarcrd, value)

  for (const name of ['a'.repeat(253), `${'b'.repeat(60)}.${'c'.repeat(40)}.${'d'.repeat(100)}`, `${'e'.repeat(41)}.${'f'.repeat(30)}`, `${'g'.repeat(230)}-${'h'.repeat(22)}`]) {
    const longest = fixture('pulsar-consumer', 'sync-no-labels')
    longest.parent.metadata.name = name
    const deployment = deploymentOf(await answer(hooks, longest))
    assert.ok(deployment.metadata.name.length <= 253 && DNS_SUBDOMAIN.test(deployment.metadata.name), deployment.metadata.name)
    const label = deployment.spec.selector.matchLabels.pulsarcrd
    assert.ok(label.length <= 63 && LABEL_VALUE.test(label), label)
  }
})

test('readiness follows the Deployment: not applied yet, rolling out, pods not ready, ready', async (t) => {
  const hooks = await app(t)
  const reason = async (request: Json): Promise<string> => (await answer(hooks, request)).status.conditions[0].reason

  assert.equal(await reason(fixture('pulsar-consumer', 'sync-first')), 'DeploymentCreating')
  assert.equal(await reason(fixture('pulsar-consumer', 'sync-spec-changed')), 'DeploymentUpdating')
  assert.equal(await reason(fixture('pulsar-consumer', 'sync-scale-up-pods-starting')), 'ConsumersNotReady')
  assert.equal(await reason(fixture('pulsar-consumer', 'sync-steady')), 'ConsumersReady')
  assert.equal(await reason(fixture('pulsar-consumer', 'sync-scaled-to-zero')), 'ConsumersReady')
  assert.equal(await reason(fixture('pulsar-consumer', 'sync-deleting')), 'Deleting')

  const lagging = fixture('pulsar-consumer', 'sync-steady')
  const deployment = Object.values(lagging.children['Deployment.apps/v1'])[0] as Json
  deployment.metadata.generation = 2
  assert.equal(await reason(lagging), 'RollingOut', 'the Deployment controller has not seen the latest spec')

  const extraEnv = fixture('pulsar-consumer', 'sync-steady')
  const edited = Object.values(extraEnv.children['Deployment.apps/v1'])[0] as Json
  edited.spec.template.spec.containers[0].env.unshift({ name: 'LOG_LEVEL', value: 'debug' })
  assert.equal(await reason(extraEnv), 'ConsumersReady', 'fields added by someone else do not make it unready')

  const noStatus = fixture('pulsar-consumer', 'sync-steady')
  const fresh = Object.values(noStatus.children['Deployment.apps/v1'])[0] as Json
  delete fresh.status
  const json = await answer(hooks, noStatus)
  assert.equal(json.status.readyReplicas, 0)
  assert.equal(json.status.conditions[0].reason, 'RollingOut')
})

test('lastTransitionTime moves only when Ready changes', async (t) => {
  const hooks = await app(t)
  const starting = fixture('pulsar-consumer', 'sync-scale-up-pods-starting')
  const kept = await answer(hooks, starting)
  assert.equal(kept.status.conditions[0].lastTransitionTime, starting.parent.status.conditions[0].lastTransitionTime)
  const flipped = await answer(hooks, fixture('pulsar-consumer', 'sync-scale-up'))
  assert.equal(flipped.status.conditions[0].status, 'False')
  assert.equal(flipped.status.conditions[0].lastTransitionTime, '2026-11-22T12:00:00Z')
})

test('deletion in progress: the same Deployment (Metacontroller leaves it to garbage collection) and Ready=False', async (t) => {
  const hooks = await app(t)
  const deleting = await answer(hooks, fixture('pulsar-consumer', 'sync-deleting'))
  const steady = await answer(hooks, fixture('pulsar-consumer', 'sync-steady'))
  assert.deepEqual(deleting.children, steady.children)
  assert.equal(deleting.status.readyReplicas, 1)
  assert.deepEqual({ ...deleting.status.conditions[0], lastTransitionTime: undefined }, {
    type: 'Ready',
    status: 'False',
    reason: 'Deleting',
    message: 'PulsarConsumer is being deleted; garbage collection removes Deployment pulsarconsumer-sample-1-deployment',
    lastTransitionTime: undefined,
    observedGeneration: 2
  })
})

test('the CRD status schema declares every field the hook writes, so the API server prunes nothing', async (t) => {
  const hooks = await app(t)
  const declared = Object.keys(pulsarConsumerResource.statusSchema.properties)
  const conditionFields = Object.keys(ConditionSchema.properties)
  for (const name of SYNC_CASES) {
    const { status } = await answer(hooks, fixture('pulsar-consumer', name))
    for (const key of Object.keys(status)) assert.ok(declared.includes(key), `${name}: status.${key} is not in the CRD`)
    for (const condition of status.conditions) {
      for (const key of Object.keys(condition)) assert.ok(conditionFields.includes(key), `${name}: condition field ${key} is not in the CRD`)
    }
  }
})
