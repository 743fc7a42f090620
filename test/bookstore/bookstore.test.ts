import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { bookStore } from '../../hooks/bookstore/index.js'
import { kubernetesTime } from '../../hooks/framework/wire/conditions.js'
import { build, NOW, postText } from '../helpers/app.js'
import { appliedChildren, withSortedKeys } from '../../dev/api-server/apply.js'
import { fixture } from '../helpers/fixtures.js'
import { assertGolden } from '../helpers/golden.js'
import { invalidSpecReady, lastAppliedChildren } from '../helpers/invalid-spec.js'

const CASES = ['first-sync', 'steady-state', 'scale-up', 'scale-down', 'spec-change', 'db-size-raised', 'db-size-lowered', 'deletion-in-progress']
const NS = 'default'
const N = 'example-bookstore'
const CLAIM = (ordinal: number) => `data-${N}-mongodb-${ordinal}`

type Json = Record<string, any>

async function sync (t: TestContext, body: unknown): Promise<{ statusCode: number, json: Json }> {
  const { app } = await build(t, { databaseUrl: false, controllers: [bookStore] })
  const response = await app.inject({ method: 'POST', url: '/bookstore/sync', payload: body as object })
  return { statusCode: response.statusCode, json: response.json() }
}

async function answer (t: TestContext, body: unknown): Promise<Json> {
  const { statusCode, json } = await sync(t, body)
  assert.equal(statusCode, 200, JSON.stringify(json))
  return json
}

function child (response: Json, kind: string, name: string): Json {
  const found = response.children.find((c: Json) => c.kind === kind && c.metadata.name === name)
  assert.ok(found !== undefined, `${kind} ${name} is in the answer`)
  return found
}

function claims (response: Json): Array<{ name: string, storage: string, storageClassName?: string }> {
  return response.children.filter((c: Json) => c.kind === 'PersistentVolumeClaim')
    .map((c: Json) => ({ name: c.metadata.name, storage: c.spec.resources.requests.storage, ...(c.spec.storageClassName === undefined ? {} : { storageClassName: c.spec.storageClassName }) }))
}

function condition (response: Json, type: string): Json | undefined {
  return response.status.conditions.find((c: Json) => c.type === type)
}

/** A volume condition as the hook states it for the fixtures' generation 2, at NOW. */
function volumeCondition (type: string, reason: string, message: string): Json {
  return { type, status: 'True', reason, message, lastTransitionTime: kubernetesTime(NOW), observedGeneration: 2 }
}

/**
 * The request Metacontroller sends after applying `response`: children as the cluster holds them (with the ready
 * counts the request saw), keys sorted as Metacontroller sends them, status as written.
 */
function nextRequest (request: Json, response: Json, defaultStorageClass?: string): Json {
  const state = { time: '2026-11-22T12:00:01Z', resourceVersion: 9000, ...(defaultStorageClass === undefined ? {} : { defaultStorageClass }) }
  const observedReady = (child: Json): number => request.children[`${child.kind}.${child.apiVersion}`]?.[`${NS}/${child.metadata.name}`]?.status?.readyReplicas ?? 0
  const children = appliedChildren(request.parent, response.children, request.children, state, (child) => ({ readyReplicas: observedReady(child) }))
  return { ...request, parent: { ...request.parent, status: response.status }, children: withSortedKeys(children) }
}

function withSpec (request: Json, change: (spec: Json) => void): Json {
  const copy = structuredClone(request)
  change(copy.parent.spec)
  return copy
}

for (const name of CASES) {
  test(`fixture ${name}: the answer is the golden one`, async (t) => {
    assertGolden(await answer(t, fixture('bookstore', name)), 'bookstore', name)
  })

  test(`fixture ${name}: a second sync over the applied children answers the same bytes`, async (t) => {
    const request = fixture('bookstore', name)
    const first = await answer(t, request)
    const second = await answer(t, nextRequest(request, first))
    assert.equal(JSON.stringify(second.children), JSON.stringify(first.children))
    assert.equal(JSON.stringify(second.status), JSON.stringify(first.status))
    const third = await answer(t, nextRequest(nextRequest(request, first), second))
    assert.equal(JSON.stringify(third), JSON.stringify(first))
  })
}

test('first sync: the five children of the sample, named from the parent, with the database wired into the app', async (t) => {
  const response = await answer(t, fixture('bookstore', 'first-sync'))
  assert.deepEqual(response.children.map((c: Json) => `${c.kind} ${c.metadata.name}`), [
    `Service ${N}-mongodb`, `StatefulSet ${N}-mongodb`, `PersistentVolumeClaim ${CLAIM(0)}`, `Service ${N}-bookstore`, `Deployment ${N}-bookstore`
  ])
  for (const c of response.children) {
    assert.equal(c.metadata.namespace, NS)
    assert.equal(c.metadata.labels['app.kubernetes.io/instance'], N)
    assert.equal(c.metadata.labels['app.kubernetes.io/managed-by'], 'metacontroller-hooks')
    assert.equal(c.metadata.ownerReferences, undefined)
    assert.equal(c.status, undefined)
  }
  const statefulSet = child(response, 'StatefulSet', `${N}-mongodb`)
  assert.equal(statefulSet.spec.serviceName, `${N}-mongodb`)
  assert.deepEqual(statefulSet.spec.selector.matchLabels, { 'app.kubernetes.io/name': 'bookstore', 'app.kubernetes.io/instance': N, 'app.kubernetes.io/component': 'database' })
  const mongo = statefulSet.spec.template.spec.containers[0]
  assert.deepEqual(mongo.volumeMounts, [{ name: 'data', mountPath: '/data/db' }])
  assert.deepEqual(mongo.ports, [{ name: 'mongodb', containerPort: 27017, protocol: 'TCP' }])
  const [template] = statefulSet.spec.volumeClaimTemplates
  assert.equal(template.metadata.name, 'data')
  assert.equal(template.metadata.labels['controller-uid'], fixture('bookstore', 'first-sync').parent.metadata.uid)
  assert.equal(template.spec.resources.requests.storage, '2Gi')
  assert.deepEqual(claims(response), [{ name: CLAIM(0), storage: '2Gi' }])
  assert.equal(child(response, 'Service', `${N}-mongodb`).spec.clusterIP, 'None')
  const appService = child(response, 'Service', `${N}-bookstore`)
  assert.equal(appService.spec.type, 'LoadBalancer')
  assert.deepEqual(appService.spec.ports, [{ name: 'http', port: 80, targetPort: 3000, protocol: 'TCP' }])
  const app = child(response, 'Deployment', `${N}-bookstore`).spec.template.spec.containers[0]
  assert.equal(app.image, 'akash125/pyapp:latest')
  assert.deepEqual(app.env, [
    { name: 'MONGODB_HOST', value: `${N}-mongodb-0.${N}-mongodb` },
    { name: 'MONGODB_PORT', value: '27017' },
    { name: 'MONGODB_URI', value: `mongodb://${N}-mongodb-0.${N}-mongodb:27017` }
  ])
  const ready = condition(response, 'Ready')
  assert.equal(ready?.status, 'False')
  assert.equal(ready?.reason, 'ReplicasNotReady')
  assert.equal(ready?.lastTransitionTime, kubernetesTime(NOW))
})

test('steady state: the first answer again (plus the class the cluster gave the claim), Ready=True keeping its transition time', async (t) => {
  const first = await answer(t, fixture('bookstore', 'first-sync'))
  child(first, 'PersistentVolumeClaim', CLAIM(0)).spec.storageClassName = 'csi-hostpath-sc'
  const steady = await answer(t, fixture('bookstore', 'steady-state'))
  assert.equal(JSON.stringify(steady.children), JSON.stringify(first.children))
  assert.deepEqual(steady.status.app, { replicas: 1, readyReplicas: 1 })
  assert.deepEqual(steady.status.db, { replicas: 1, readyReplicas: 1, volumeSize: '2Gi' })
  assert.deepEqual(condition(steady, 'Ready'), fixture('bookstore', 'steady-state').parent.status.conditions[0])
})

test('scale up: one claim per replica, the StatefulSet keeps its claim template', async (t) => {
  const request = fixture('bookstore', 'scale-up')
  const response = await answer(t, request)
  assert.deepEqual(claims(response), [0, 1, 2].map((i) => ({ name: CLAIM(i), storage: '2Gi', ...(i === 0 ? { storageClassName: 'csi-hostpath-sc' } : {}) })))
  const statefulSet = child(response, 'StatefulSet', `${N}-mongodb`)
  assert.equal(statefulSet.spec.replicas, 3)
  assert.deepEqual(statefulSet.spec.volumeClaimTemplates, request.children['StatefulSet.apps/v1'][`${NS}/${N}-mongodb`].spec.volumeClaimTemplates)
  assert.deepEqual(response.status.db, { replicas: 3, readyReplicas: 1, volumeSize: '2Gi' })
  assert.equal(condition(response, 'Ready')?.reason, 'DatabaseNotReady')
  assert.match(condition(response, 'Ready')?.message, /database 1\/3 \(StatefulSet example-bookstore-mongodb\)/)
})

test('scale down: claims of the removed replicas are kept', async (t) => {
  const response = await answer(t, fixture('bookstore', 'scale-down'))
  assert.equal(child(response, 'StatefulSet', `${N}-mongodb`).spec.replicas, 1)
  assert.deepEqual(claims(response).map((c) => c.name), [CLAIM(0), CLAIM(1), CLAIM(2)])
  assert.deepEqual(response.status.db, { replicas: 1, readyReplicas: 3, volumeSize: '2Gi' })
})

test('claims above bookDB.replicas are kept whatever their ordinals, other claims are not invented', async (t) => {
  const request = withSpec(fixture('bookstore', 'scale-down'), (spec) => { spec.bookDB.replicas = 0 })
  const group = request.children['PersistentVolumeClaim.v1']
  const lone = structuredClone(group[`${NS}/${CLAIM(2)}`])
  lone.metadata.name = CLAIM(7)
  group[`${NS}/${CLAIM(7)}`] = lone
  delete group[`${NS}/${CLAIM(1)}`]
  const response = await answer(t, request)
  assert.deepEqual(claims(response).map((c) => c.name), [CLAIM(0), CLAIM(2), CLAIM(7)])
  assert.equal(child(response, 'StatefulSet', `${N}-mongodb`).spec.replicas, 0)
})

test('spec change: new tag, port and service type reach the children; selectors do not move', async (t) => {
  const steady = await answer(t, fixture('bookstore', 'steady-state'))
  const response = await answer(t, fixture('bookstore', 'spec-change'))
  const service = child(response, 'Service', `${N}-bookstore`)
  assert.equal(service.spec.type, 'NodePort')
  assert.deepEqual(service.spec.ports, [{ name: 'http', port: 8080, targetPort: 3000, protocol: 'TCP' }])
  const deployment = child(response, 'Deployment', `${N}-bookstore`)
  assert.equal(deployment.spec.template.spec.containers[0].image, 'akash125/pyapp:1.1.0')
  assert.deepEqual(deployment.spec.selector, child(steady, 'Deployment', `${N}-bookstore`).spec.selector)
  assert.deepEqual(service.spec.selector, child(steady, 'Service', `${N}-bookstore`).spec.selector)
  assert.equal(condition(response, 'Ready')?.observedGeneration, 2)
  assert.equal(response.status.observedGeneration, 2)
})

test('dbSize raised: the claims are resized in place, the immutable claim template is not touched', async (t) => {
  const response = await answer(t, fixture('bookstore', 'db-size-raised'))
  assert.deepEqual(claims(response), [{ name: CLAIM(0), storage: '5Gi', storageClassName: 'csi-hostpath-sc' }])
  assert.equal(child(response, 'StatefulSet', `${N}-mongodb`).spec.volumeClaimTemplates[0].spec.resources.requests.storage, '2Gi')
  assert.equal(response.status.db.volumeSize, '5Gi')
  assert.equal(condition(response, 'VolumeShrinkRefused'), undefined)
})

test('dbSize lowered: no claim shrinks, and VolumeShrinkRefused names the claims and their sizes', async (t) => {
  const request = fixture('bookstore', 'db-size-lowered')
  const response = await answer(t, request)
  assert.deepEqual(claims(response), [{ name: CLAIM(0), storage: '2Gi', storageClassName: 'csi-hostpath-sc' }])
  assert.equal(response.status.db.volumeSize, '2Gi')
  assert.deepEqual(condition(response, 'VolumeShrinkRefused'), volumeCondition('VolumeShrinkRefused', 'DbSizeBelowClaimSize',
    `spec.bookDB.dbSize 1Gi is smaller than what claims already request, and volumes never shrink: ${CLAIM(0)} stays at 2Gi`))
  assert.equal(condition(response, 'Ready')?.status, 'True', 'a refused shrink does not make the BookStore unready')

  const raisedAgain = withSpec(nextRequest(request, response), (spec) => { spec.bookDB.dbSize = '2Gi' })
  const after = await answer(t, raisedAgain)
  assert.equal(condition(after, 'VolumeShrinkRefused'), undefined, 'the condition goes once dbSize covers every claim')
})

test('a claim not bound yet keeps its size until it is (the API server resizes only bound claims)', async (t) => {
  const request = fixture('bookstore', 'db-size-raised')
  const claim = request.children['PersistentVolumeClaim.v1'][`${NS}/${CLAIM(0)}`]
  claim.status = { phase: 'Pending' }
  delete claim.spec.volumeName
  const waiting = await answer(t, request)
  assert.deepEqual(claims(waiting), [{ name: CLAIM(0), storage: '2Gi', storageClassName: 'csi-hostpath-sc' }])
  assert.equal(waiting.status.db.volumeSize, '2Gi')
  assert.deepEqual(condition(waiting, 'VolumeResizePending'), volumeCondition('VolumeResizePending', 'ClaimNotBound',
    `spec.bookDB.dbSize 5Gi waits for claims to be bound, as Kubernetes resizes only bound claims: ${CLAIM(0)} stays at 2Gi for now`))

  const bound = await answer(t, fixture('bookstore', 'db-size-raised'))
  assert.deepEqual(claims(bound), [{ name: CLAIM(0), storage: '5Gi', storageClassName: 'csi-hostpath-sc' }])
  assert.equal(condition(bound, 'VolumeResizePending'), undefined)
})

test('no claim ever shrinks: each requests the larger of dbSize and its observed size, keeping the observed string on a tie', async (t) => {
  const cases: Array<[dbSize: string | number, observed: string, expected: string, refused: boolean]> = [
    ['2Gi', '2G', '2Gi', false],
    ['2G', '2Gi', '2Gi', true],
    ['1.5Gi', '1536Mi', '1536Mi', false],
    ['3072Mi', '3Gi', '3Gi', false],
    ['1Gi', '1181116006400m', '1181116006400m', true],
    ['2048Mi', '1Gi', '2Gi', false],
    ['1.5Gi', '1Gi', '1536Mi', false],
    [1073741824, '512Mi', '1073741824', false],
    ['1Ti', '1000Gi', '1Ti', false],
    ['1000Gi', '1Ti', '1Ti', true]
  ]
  for (const [dbSize, observed, expected, refused] of cases) {
    const request = withSpec(fixture('bookstore', 'steady-state'), (spec) => { spec.bookDB.dbSize = dbSize })
    request.children['PersistentVolumeClaim.v1'][`${NS}/${CLAIM(0)}`].spec.resources.requests.storage = observed
    const response = await answer(t, request)
    const label = `dbSize ${dbSize} over a claim of ${observed}`
    assert.equal(claims(response)[0]?.storage, expected, label)
    assert.equal(condition(response, 'VolumeShrinkRefused') !== undefined, refused, label)
  }
})

test('dbSize is written in the canonical form the API server stores', async (t) => {
  for (const [dbSize, canonical] of [['2048Mi', '2Gi'], ['1.5Gi', '1536Mi'], ['2000M', '2G'], ['1E9', '1e9'], [5368709120, '5368709120'], ['+3Gi', '3Gi'], ['1500m', '2'], ['1.1Gi', '1181116007'], ['9223372036854775806', '9223372036854775806']] as const) {
    const response = await answer(t, withSpec(fixture('bookstore', 'first-sync'), (spec) => { spec.bookDB.dbSize = dbSize }))
    assert.equal(claims(response)[0]?.storage, canonical, String(dbSize))
    assert.equal(child(response, 'StatefulSet', `${N}-mongodb`).spec.volumeClaimTemplates[0].spec.resources.requests.storage, canonical, String(dbSize))
    assert.equal(response.status.db.volumeSize, canonical)
  }
})

test('storage classes: existing claims and the claim template keep theirs, new claims get the spec\'s or none', async (t) => {
  const scaleUp = fixture('bookstore', 'scale-up')
  const withoutClass = await answer(t, scaleUp)
  assert.deepEqual(claims(withoutClass).map((c) => c.storageClassName), ['csi-hostpath-sc', undefined, undefined])

  const withClass = await answer(t, withSpec(scaleUp, (spec) => { spec.bookDB.storageClassName = 'fast-ssd' }))
  assert.deepEqual(claims(withClass).map((c) => c.storageClassName), ['csi-hostpath-sc', 'fast-ssd', 'fast-ssd'])
  assert.equal(child(withClass, 'StatefulSet', `${N}-mongodb`).spec.volumeClaimTemplates[0].spec.storageClassName, undefined)

  const created = await answer(t, withSpec(fixture('bookstore', 'first-sync'), (spec) => { spec.bookDB.storageClassName = 'fast-ssd' }))
  assert.equal(child(created, 'StatefulSet', `${N}-mongodb`).spec.volumeClaimTemplates[0].spec.storageClassName, 'fast-ssd')
  assert.equal(claims(created)[0]?.storageClassName, 'fast-ssd')
})

test('a class the cluster gives a new claim is stated from the next answer on (it is immutable), then nothing moves', async (t) => {
  const request = fixture('bookstore', 'first-sync')
  const first = await answer(t, request)
  assert.deepEqual(claims(first), [{ name: CLAIM(0), storage: '2Gi' }])
  const afterCreate = nextRequest(request, first, 'standard')
  const second = await answer(t, afterCreate)
  assert.deepEqual(claims(second), [{ name: CLAIM(0), storage: '2Gi', storageClassName: 'standard' }])
  const withoutClasses = (response: Json): string => JSON.stringify(response, (key, value) => key === 'storageClassName' ? undefined : value)
  assert.equal(withoutClasses(second), withoutClasses(first), 'nothing else differs')
  const third = await answer(t, nextRequest(afterCreate, second, 'standard'))
  assert.equal(JSON.stringify(third), JSON.stringify(second))
})

test('an existing StatefulSet\'s claim templates are carried over as they are, whatever the spec says now', async (t) => {
  const request = withSpec(fixture('bookstore', 'steady-state'), (spec) => { spec.bookDB.dbSize = '10Gi' })
  const observed = request.children['StatefulSet.apps/v1'][`${NS}/${N}-mongodb`]
  observed.spec.volumeClaimTemplates[0].spec.resources.requests.storage = '1Gi'
  observed.spec.volumeClaimTemplates[0].spec.storageClassName = 'standard'
  const response = await answer(t, request)
  assert.deepEqual(child(response, 'StatefulSet', `${N}-mongodb`).spec.volumeClaimTemplates, observed.spec.volumeClaimTemplates)
})

test('deletion in progress: the answer still holds every child', async (t) => {
  const steady = await answer(t, fixture('bookstore', 'steady-state'))
  const response = await answer(t, fixture('bookstore', 'deletion-in-progress'))
  assert.equal(JSON.stringify(response.children), JSON.stringify(steady.children))
  assert.equal(response.status.observedGeneration, 2)
})

test('a spec with only bookApp.repository gets every default', async (t) => {
  const request = withSpec(fixture('bookstore', 'first-sync'), (spec) => {
    spec.bookApp = { repository: 'example/bookstore' }
    delete spec.bookDB
  })
  const response = await answer(t, request)
  const mongo = child(response, 'StatefulSet', `${N}-mongodb`).spec.template.spec.containers[0]
  assert.equal(mongo.image, 'mongo:latest')
  assert.equal(mongo.imagePullPolicy, undefined, 'left to the API server')
  assert.deepEqual(mongo.args, ['--port', '27017'])
  assert.deepEqual(claims(response), [{ name: CLAIM(0), storage: '1Gi' }])
  const service = child(response, 'Service', `${N}-bookstore`)
  assert.equal(service.spec.type, 'ClusterIP')
  assert.deepEqual(service.spec.ports, [{ name: 'http', port: 80, targetPort: 3000, protocol: 'TCP' }])
  assert.equal(child(response, 'Deployment', `${N}-bookstore`).spec.template.spec.containers[0].image, 'example/bookstore:latest')
})

test('a spec the hook cannot interpret gets Ready=False InvalidSpec naming the field, and the children kept as they are', async (t) => {
  const cases: Array<[string, (spec: Json) => void, RegExp]> = [
    ['dbSize: lots', (spec) => { spec.bookDB.dbSize = 'lots' }, /spec\.bookDB\.dbSize: "lots" must be a size such as 1Gi, 500Mi or 2G/],
    ['dbSize: 0', (spec) => { spec.bookDB.dbSize = '0' }, /spec\.bookDB\.dbSize: "0" must be at least one byte/],
    ['dbSize: 0 as a number', (spec) => { spec.bookDB.dbSize = 0 }, /spec\.bookDB\.dbSize: 0 must be at least one byte/],
    ['dbSize: -1Gi', (spec) => { spec.bookDB.dbSize = '-1Gi' }, /spec\.bookDB\.dbSize: "-1Gi" must be at least one byte/],
    ['dbSize: 100m', (spec) => { spec.bookDB.dbSize = '100m' }, /spec\.bookDB\.dbSize: "100m" must be at least one byte/],
    ['dbSize: 9Ei', (spec) => { spec.bookDB.dbSize = '9Ei' }, /"9Ei" must be less than 8Ei \(9223372036854775807 bytes\)/],
    ['dbSize: 8Ei', (spec) => { spec.bookDB.dbSize = '8Ei' }, /"8Ei" must be less than 8Ei/],
    ['dbSize: 1e0009', (spec) => { spec.bookDB.dbSize = '1e0009' }, /"1e0009" must be a size such as 1Gi/],
    ['dbSize: true', (spec) => { spec.bookDB.dbSize = true }, /spec\.bookDB\.dbSize: Expected a number of bytes, or a quantity of at most 64 characters such as 1Gi/],
    ['replicas: -1', (spec) => { spec.bookDB.replicas = -1 }, /spec\.bookDB\.replicas: Expected integer to be greater or equal to 0/],
    ['replicas: 51', (spec) => { spec.bookDB.replicas = 51 }, /spec\.bookDB\.replicas: Expected integer to be less or equal to 50/],
    ['serviceType: Bogus', (spec) => { spec.bookApp.serviceType = 'Bogus' }, /spec\.bookApp\.serviceType: Expected one of "ClusterIP", "NodePort", "LoadBalancer"/],
    ['targetPort: 70000', (spec) => { spec.bookApp.targetPort = 70000 }, /spec\.bookApp\.targetPort: Expected integer to be less or equal to 65535/],
    ['no repository', (spec) => { delete spec.bookApp.repository }, /spec\.bookApp\.repository: Expected required property/],
    ['no bookApp', (spec) => { delete spec.bookApp }, /spec\.bookApp: Expected required property/]
  ]
  for (const [label, change, message] of cases) {
    const request = withSpec(fixture('bookstore', 'steady-state'), change)
    const { statusCode, json } = await sync(t, request)
    assert.match(invalidSpecReady(statusCode, json, label).message, message, label)
    assert.deepEqual(json.children, lastAppliedChildren(request), label)
  }
})

test('a name the children cannot be named after gets 422 saying why', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['a name too long for the StatefulSet', 'a'.repeat(45), /at most 44 characters/],
    ['a name that is not a DNS label', 'book.store', /BookStore name "book\.store" cannot be used: it must start with a letter, .* because its children are named after it/]
  ]
  for (const [label, name, message] of cases) {
    const request = structuredClone(fixture('bookstore', 'steady-state'))
    request.parent.metadata.name = name
    const { statusCode, json } = await sync(t, request)
    assert.equal(statusCode, 422, label)
    assert.match(json.message, message, label)
    assert.equal(json.children, undefined, label)
  }
})

test('a plain number beyond 2^53 is named as such in InvalidSpec, never the rounded value JSON.parse made of it', async (t) => {
  const { app } = await build(t, { databaseUrl: false, controllers: [bookStore] })
  const payload = JSON.stringify(withSpec(fixture('bookstore', 'steady-state'), (spec) => { spec.bookDB.dbSize = 0 })).replace('"dbSize":0', '"dbSize":9007199254740993')
  const response = await postText(app, '/bookstore/sync', payload)
  const { message } = invalidSpecReady(response.statusCode, response.json())
  assert.match(message, /spec\.bookDB\.dbSize: a plain number of bytes must be at most 9007199254740991 \(2\^53 - 1\)/)
  assert.doesNotMatch(message, /9007199254740992/)
})

test('an observed claim whose size is not a quantity is asked for dbSize, and VolumeSizeUnknown says so', async (t) => {
  const cases: Array<[string, (resources: Json) => void, string]> = [
    ['missing', (resources) => { delete resources.requests.storage }, 'nothing'],
    ['null', (resources) => { resources.requests.storage = null }, 'null'],
    ['a number', (resources) => { resources.requests.storage = 5 }, '5'],
    ['empty', (resources) => { resources.requests.storage = '' }, '""'],
    ['not a quantity', (resources) => { resources.requests.storage = 'plenty' }, '"plenty"'],
    ['an object', (resources) => { resources.requests = { storage: { amount: 2 } } }, 'an object'],
    ['no requests at all', (resources) => { delete resources.requests }, 'nothing']
  ]
  for (const [label, change, shown] of cases) {
    const request = withSpec(fixture('bookstore', 'steady-state'), (spec) => { spec.bookDB.dbSize = '3Gi' })
    change(request.children['PersistentVolumeClaim.v1'][`${NS}/${CLAIM(0)}`].spec.resources)
    const response = await answer(t, request)
    assert.deepEqual(claims(response), [{ name: CLAIM(0), storage: '3Gi', storageClassName: 'csi-hostpath-sc' }], label)
    const message = `claims whose spec.resources.requests.storage is not a quantity, which no API server stores, are asked for spec.bookDB.dbSize 3Gi; Kubernetes refuses to make a bound claim smaller, so none shrinks: ${CLAIM(0)} requests ${shown}`
    assert.deepEqual(condition(response, 'VolumeSizeUnknown'), { ...volumeCondition('VolumeSizeUnknown', 'ClaimSizeNotAQuantity', message), observedGeneration: 1 }, label)
    assert.equal(response.status.db.volumeSize, '3Gi', label)
  }
  const readable = await answer(t, fixture('bookstore', 'steady-state'))
  assert.equal(condition(readable, 'VolumeSizeUnknown'), undefined, 'absent while every claim is readable')
})

test('an observed StatefulSet whose claim templates nest 100,000 levels deep gets 400 naming it, not a 500', async (t) => {
  const text = JSON.stringify(fixture('bookstore', 'steady-state'))
  const deep = '['.repeat(100_000) + ']'.repeat(100_000)
  const { app } = await build(t, { databaseUrl: false, controllers: [bookStore] })
  const payload = text.replace('"volumeClaimTemplates":[', `"volumeClaimTemplates":[${deep},`)
  const response = await postText(app, '/bookstore/sync', payload)
  assert.equal(response.statusCode, 400)
  assert.match(response.json().message, new RegExp(`StatefulSet ${N}-mongodb's spec.volumeClaimTemplates nest more than 64 levels deep`))
})
