import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ChildResource } from '../../hooks/framework/controller.js'
import { podSet } from '../../hooks/podset/index.js'
import type { CompositeRequest, CompositeResponse, KubernetesObject } from '../../hooks/framework/wire/schemas.js'
import { goJson, LAST_APPLIED_ANNOTATION as LAST_APPLIED } from '../../hooks/framework/wire/last-applied.js'
import { applyUpdate, planSync } from '../../dev/metacontroller-apply.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'

type Json = Record<string, any>

/** An observed object that Metacontroller created from `applied`, after the API server and others added `extra`. */
function observed (applied: Json, extra: Json): KubernetesObject {
  return { ...structuredClone(applied), ...extra, metadata: { ...applied.metadata, ...extra.metadata, annotations: { ...extra.metadata?.annotations, [LAST_APPLIED]: goJson(applied) } } } as KubernetesObject
}

const applied = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default', labels: { app: 'a' } },
  spec: { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 80 }] }], nodeSelector: { disk: 'ssd' } }
}

test('the three-way merge keeps what others set, drops what the last answer had and this one has not, and matches list items by key', () => {
  const current = observed(applied, {
    metadata: { uid: 'u', resourceVersion: '7', labels: { app: 'a', added: 'by-someone' } },
    spec: { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 80, protocol: 'TCP' }], terminationMessagePath: '/dev/termination-log' }, { name: 'sidecar', image: 'mesh' }], nodeSelector: { disk: 'ssd' }, restartPolicy: 'Always' },
    status: { phase: 'Running' }
  })
  assert.deepEqual(applyUpdate(current, applied as KubernetesObject), current, 'the same answer again changes nothing')

  const desired = structuredClone(applied) as Json
  desired.spec.containers[0].image = 'app:2'
  delete desired.spec.nodeSelector
  desired.status = { phase: 'Failed' }
  desired.metadata.uid = 'other'
  const merged = applyUpdate(current, desired as KubernetesObject) as Json
  assert.equal(merged.spec.containers[0].image, 'app:2')
  assert.equal(merged.spec.containers[0].terminationMessagePath, '/dev/termination-log')
  assert.deepEqual(merged.spec.containers[0].ports, [{ containerPort: 80, protocol: 'TCP' }])
  assert.deepEqual(merged.spec.containers.map((c: Json) => c.name), ['app', 'sidecar'])
  assert.equal(merged.spec.nodeSelector, undefined)
  assert.equal(merged.spec.restartPolicy, 'Always')
  assert.deepEqual(merged.metadata.labels, { app: 'a', added: 'by-someone' })
  // System fields and the status stay as observed; the annotation records this answer.
  assert.equal(merged.metadata.uid, 'u')
  assert.deepEqual(merged.status, { phase: 'Running' })
  assert.equal(merged.metadata.annotations[LAST_APPLIED], goJson(desired))
})

test('a list without a merge key is replaced; a key named like a property of every object is a field like any other; a last-applied annotation that is not JSON fails the sync', () => {
  const current = observed({ ...applied, spec: { args: ['a', 'b'] } }, {})
  assert.deepEqual((applyUpdate(current, { ...applied, spec: { args: ['c'] } } as KubernetesObject) as Json).spec.args, ['c'])
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' } }
  const twoKeys = observed({ ...configMap, data: { constructor: 'a', toString: 'b' } }, {})
  assert.deepEqual((applyUpdate(twoKeys, { ...configMap, data: { toString: 'b' } } as KubernetesObject) as Json).data, { toString: 'b' })
  const containers = observed({ ...applied, spec: { containers: [{ name: 'constructor', image: 'a' }] } }, {})
  assert.deepEqual((applyUpdate(containers, { ...applied, spec: { containers: [{ name: 'app', image: 'a' }] } } as KubernetesObject) as Json).spec.containers, [{ name: 'app', image: 'a' }])
  const broken = { ...current, metadata: { ...current.metadata, annotations: { [LAST_APPLIED]: '{' } } }
  assert.throws(() => applyUpdate(broken, applied as KubernetesObject), /annotation is not JSON .*Metacontroller's sync fails on it/)
})

/** The PodSet scale-down fixture, planned by the hook's own answer, with Pods under another update strategy. */
async function podSetPlan (t: Parameters<typeof build>[0], name: string, updateStrategy: ChildResource['updateStrategy'] = 'Recreate'): Promise<ReturnType<typeof planSync>> {
  const request = fixture<CompositeRequest>('podset', name)
  const { app } = await build(t, { databaseUrl: false, controllers: [podSet] })
  const answer = (await app.inject({ method: 'POST', url: '/podset/sync', payload: request })).json<CompositeResponse>()
  const controller = { ...podSet, childResources: podSet.childResources.map((child) => ({ ...child, updateStrategy })) }
  return planSync(controller, request.parent, request.children, answer)
}

test('each update strategy as Metacontroller applies it: InPlace updates, Recreate deletes to create anew, OnDelete leaves the child as it is', async (t) => {
  const pods = ['sleepers-pod-0', 'sleepers-pod-1', 'sleepers-pod-2'].map((name) => `Pod default/${name}`)
  const image = [{ field: 'spec.containers[name=busybox].image', from: 'busybox:1.36', to: 'busybox:1.37' }]
  const byStrategy = {
    InPlace: 'update',
    Recreate: 'recreate',
    OnDelete: 'leftAsIs'
  } as const
  for (const [strategy, part] of Object.entries(byStrategy) as Array<[keyof typeof byStrategy, (typeof byStrategy)[keyof typeof byStrategy]]>) {
    const plan = await podSetPlan(t, 'image-changed', strategy)
    assert.deepEqual(plan[part], pods.map((child) => ({ child, strategy, fields: image })), strategy)
    for (const other of Object.values(byStrategy).filter((p) => p !== part)) assert.deepEqual(plan[other], [], `${strategy}: ${other}`)
    assert.deepEqual([plan.create, plan.delete, plan.unchanged], [[], [], []], strategy)
  }
})

test('a child being deleted: left to go when the answer drops it, and left alone until it is gone when the answer changes it', async (t) => {
  // Pods -0 and -1 run; -2 is being deleted.
  const request = fixture<CompositeRequest>('podset', 'pod-terminating')
  const { app } = await build(t, { databaseUrl: false, controllers: [podSet] })
  const planFor = async (spec: Json): Promise<ReturnType<typeof planSync>> => {
    const changed = structuredClone(request)
    changed.parent.spec = { ...(changed.parent.spec as Json), ...spec }
    const answer = (await app.inject({ method: 'POST', url: '/podset/sync', payload: changed })).json<CompositeResponse>()
    return planSync(podSet, changed.parent, changed.children, answer)
  }
  const scaledDown = await planFor({ replicas: 2 })
  assert.deepEqual([scaledDown.delete, scaledDown.beingDeleted, scaledDown.unchanged], [[], ['Pod default/sleepers-pod-2'], ['Pod default/sleepers-pod-0', 'Pod default/sleepers-pod-1']])
  const newImage = await planFor({ image: 'busybox:1.37' })
  assert.deepEqual(newImage.recreate.map((c) => c.child), ['Pod default/sleepers-pod-0', 'Pod default/sleepers-pod-1'])
  assert.deepEqual(newImage.waitForDeletion.map((c) => c.child), ['Pod default/sleepers-pod-2'])
})

test('a parent being deleted without a finalize hook: no child is touched; an answer whose child another parent selects changes nothing', async (t) => {
  const deleting = await podSetPlan(t, 'parent-deleting')
  assert.match(String(deleting.childrenUnmanaged), /is being deleted and podset has no finalize hook/)
  assert.deepEqual([deleting.delete, deleting.create, deleting.recreate], [[], [], []])

  const request = fixture<CompositeRequest>('podset', 'steady-state')
  const foreign = { ...podSet, hooks: { sync: () => ({ status: {}, children: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x', labels: { 'controller-uid': 'someone-else' } } }] }) } }
  const plan = planSync(foreign, request.parent, request.children, foreign.hooks.sync())
  assert.match(plan.errors.join(), /Pod x: its controller-uid label someone-else does not match the parent's selector .*changes nothing, its status neither/)
  assert.deepEqual([plan.delete, plan.create, plan.status], [[], [], []])
})
