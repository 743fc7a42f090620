import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { CompositeController, Controller } from '../../../hooks/framework/controller.js'
import { customResource } from '../../../hooks/framework/custom-resource.js'
import { bookStore } from '../../../hooks/bookstore/index.js'
import { podSet } from '../../../hooks/podset/index.js'
import { describe, MAX_SYNCS, type ObjectPlan } from '../../../dev/plan/parent-plan.js'
import { fixture } from '../../helpers/fixtures.js'
import { childrenOf, modelOf, PLANNED_AT, planOne, planRunner } from '../../helpers/plan.js'

type Json = Record<string, any>

const actions = (objects: ObjectPlan[]): string[] => objects.map((object) => `${object.action} ${describe(object.object)}`)

test('a parent at rest plans nothing: one sync, every child unchanged', async () => {
  for (const [controller, name] of [[podSet, 'steady-state'], [bookStore, 'steady-state']] as const) {
    const request = fixture(controller.name, name)
    const plan = await planOne(controller, request.parent, childrenOf(request))
    assert.equal(plan.outcome, 'unchanged', JSON.stringify(plan))
    assert.equal(plan.syncs, 1)
    assert.deepEqual(plan.status, [])
    assert.ok(plan.objects.every((object) => object.action === 'unchanged'))
  }
})

test('a scale-down deletes the highest ordinals, and the status follows at once', async () => {
  const request = fixture(podSet.name, 'scale-down')
  const plan = await planOne(podSet, request.parent, childrenOf(request))
  assert.equal(plan.outcome, 'changes')
  assert.equal(plan.hook, 'sync')
  assert.equal(plan.syncs, 2)
  assert.deepEqual(actions(plan.objects), [
    'delete Pod default/sleepers-pod-1', 'delete Pod default/sleepers-pod-2', 'delete Pod default/sleepers-pod-3', 'delete Pod default/sleepers-pod-4',
    'unchanged Pod default/sleepers-pod-0'
  ])
  assert.deepEqual(plan.status.find((field) => field.field === 'readyReplicas'), { field: 'readyReplicas', from: 5, to: 1 })
})

test('a new image recreates each pod (deleted by one sync, created by the next), and its Ready condition goes False and back: stamped with the sync\'s time, unless Metacontroller\'s last sync reads the status from before', async () => {
  const request = fixture(podSet.name, 'image-changed')
  const plan = await planOne(podSet, request.parent, childrenOf(request))
  assert.equal(plan.outcome, 'changes')
  assert.equal(plan.syncs, 4, 'recreate: delete, create, count the created pods, nothing more')
  for (const object of plan.objects) {
    assert.equal(object.action, 'recreate')
    assert.equal(object.strategy, 'Recreate')
    assert.deepEqual(object.fields, [{ field: 'spec.containers[name=busybox].image', from: 'busybox:1.36', to: 'busybox:1.37' }])
    assert.equal(object.manifest?.spec.containers[0].image, 'busybox:1.37')
    assert.equal(object.manifest?.metadata.labels['controller-uid'], request.parent.metadata.uid)
    assert.deepEqual(object.manifest?.metadata.ownerReferences.map((ref: Json) => ref.uid), [request.parent.metadata.uid])
    assert.equal(JSON.parse(object.manifest?.metadata.annotations['metacontroller.k8s.io/last-applied-configuration']).spec.containers[0].image, 'busybox:1.37')
  }
  assert.deepEqual(plan.status.find((field) => field.field === 'conditions[type=Ready].lastTransitionTime'), {
    field: 'conditions[type=Ready].lastTransitionTime', from: request.parent.status.conditions[0].lastTransitionTime, to: PLANNED_AT, stamped: true, mayStay: true
  })
  assert.deepEqual(plan.status.filter((field) => field.mayStay === true).map((field) => field.field), ['conditions[type=Ready].lastTransitionTime'], 'the rest is written by the first sync and the last alike')
})

test('a condition that appears is stamped with the time of the sync that writes it', async () => {
  const request = fixture(bookStore.name, 'db-size-lowered')
  const plan = await planOne(bookStore, request.parent, childrenOf(request))
  const refused = plan.status.find((field) => field.field === 'conditions[type=VolumeShrinkRefused]')
  assert.equal(refused?.stamped, true, JSON.stringify(plan.status))
  assert.equal((refused?.to as Json).lastTransitionTime, PLANNED_AT)
})

test('an orphan the selector matches is adopted; an owned child the selector no longer matches is released, and its name then collides with the answer\'s', async () => {
  const request = fixture(podSet.name, 'steady-state')
  const [pod0, pod1, pod2] = childrenOf(request) as [Json, Json, Json]
  const orphan = { ...pod0, metadata: { ...pod0.metadata, ownerReferences: [] } }
  const unlabelled = { ...pod1, metadata: { ...pod1.metadata, labels: { app: 'sleepers' } } }
  const plan = await planOne(podSet, request.parent, [orphan, unlabelled, pod2])
  assert.deepEqual(actions(plan.objects), ['adopt Pod default/sleepers-pod-0', 'release Pod default/sleepers-pod-1', 'unchanged Pod default/sleepers-pod-2'])
  assert.deepEqual(plan.objects[0]?.fields?.map((field) => field.field), ['metadata.ownerReferences'])
  assert.equal(plan.outcome, 'error')
  assert.match(plan.errors.join('\n'), /Pod default\/sleepers-pod-1 exists and is not this parent's: Metacontroller's create of it fails \(AlreadyExists\)/)
})

test('a child of another parent is not this one\'s, but its name is taken', async () => {
  const request = fixture(podSet.name, 'scale-up')
  const children = childrenOf(request)
  const taken = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'sleepers-pod-4', namespace: 'default', uid: 'other', ownerReferences: [{ uid: 'another-parent', controller: true }] } }
  const plan = await planOne(podSet, request.parent, children, { others: [taken] })
  assert.ok(plan.objects.some((object) => object.action === 'create' && object.object.name === 'sleepers-pod-3'))
  assert.ok(!plan.objects.some((object) => object.object.name === 'sleepers-pod-4'))
  assert.deepEqual(plan.errors, ['Pod default/sleepers-pod-4 exists and is not this parent\'s: Metacontroller\'s create of it fails (AlreadyExists), so it stays as it is'])
})

test('a spec the hook cannot use is refused: InvalidSpec in the status, every child kept; a 422 when a child cannot be kept', async () => {
  const request = fixture(podSet.name, 'invalid-spec')
  const plan = await planOne(podSet, request.parent, childrenOf(request))
  assert.equal(plan.outcome, 'refused')
  assert.match(plan.message ?? '', /^the hook answers InvalidSpec: PodSet spec cannot be used: spec\.replicas/)
  assert.ok(plan.objects.every((object) => object.action === 'unchanged'))

  const [pod0, ...rest] = childrenOf(request) as [Json, ...Json[]]
  const { 'metacontroller.k8s.io/last-applied-configuration': _, ...annotations } = pod0.metadata.annotations
  const refused = await planOne(podSet, request.parent, [{ ...pod0, metadata: { ...pod0.metadata, annotations } }, ...rest])
  assert.equal(refused.outcome, 'refused')
  assert.match(refused.message ?? '', /^the sync hook answers 422: .*has no metacontroller\.k8s\.io\/last-applied-configuration annotation.*SyncError/)
  assert.deepEqual(refused.status, [])
})

test('a parent being deleted by a controller without a finalize hook: the sync hook writes the status, no child is touched', async () => {
  const request = fixture(podSet.name, 'parent-deleting')
  const plan = await planOne(podSet, request.parent, childrenOf(request))
  assert.equal(plan.hook, 'sync')
  assert.ok(plan.objects.every((object) => object.action === 'unchanged'), JSON.stringify(plan.objects))
  assert.ok(plan.status.some((field) => field.field === 'conditions[type=Ready].reason'))
})

test('the cluster\'s controller object rules: its update strategy, its finalize hook and its selector, not this checkout\'s manifests', async () => {
  const request = fixture(podSet.name, 'image-changed')
  const onDelete = modelOf(podSet, { childResources: [{ apiVersion: 'v1', resource: 'pods', updateStrategy: { method: 'OnDelete' } }] })
  const left = await planOne(podSet, request.parent, childrenOf(request), { model: onDelete })
  assert.ok(left.objects.every((object) => object.action === 'leftAsIs' && object.strategy === 'OnDelete'), JSON.stringify(left.objects))

  const finalizing = modelOf(podSet, { hooks: { ...onDelete.object.spec.hooks, finalize: { webhook: { url: 'http://x/podset/finalize' } } } })
  const added = await planOne(podSet, request.parent, childrenOf(request), { model: finalizing })
  assert.deepEqual(added.metadata, [{ field: 'finalizers', to: ['metacontroller.io/compositecontroller-podset'] }])

  const selective = modelOf(podSet, { parentResource: { apiVersion: 'batch.tutorial.kubebuilder.io/v1', resource: 'podsets', labelSelector: { matchLabels: { tier: 'gold' } } } })
  const ignored = await planOne(podSet, request.parent, childrenOf(request), { model: selective })
  assert.equal(ignored.outcome, 'ignored')
})

test('each request is built as Metacontroller sends it: v1 keys by name, v2 by namespace/name, one group per child rule', async () => {
  const request = fixture(podSet.name, 'steady-state')
  for (const version of ['v1', 'v2'] as const) {
    const model = modelOf(podSet)
    model.hookVersion = version
    const sent: Json[] = []
    const real = planRunner
    await planOne(podSet, request.parent, childrenOf(request), { model, run: async (controller, hook, body) => { sent.push(body); return await real(controller, hook, body) } })
    assert.deepEqual(Object.keys(sent[0]?.children), ['Pod.v1'])
    assert.deepEqual(Object.keys(sent[0]?.children['Pod.v1']), version === 'v2' ? ['default/sleepers-pod-0', 'default/sleepers-pod-1', 'default/sleepers-pod-2'] : ['sleepers-pod-0', 'sleepers-pod-1', 'sleepers-pod-2'])
    assert.deepEqual([sent[0]?.finalizing, sent[0]?.related, sent[0]?.controller.kind], [false, {}, 'CompositeController'])
  }
})

test('an answer that changes with every sync is a loop: planned up to the limit, and said so', async () => {
  const resource = customResource({ group: 'example.com', version: 'v1', kind: 'Counter', spec: Type.Object({}), status: { syncs: Type.Optional(Type.Integer()) }, printerColumns: [] })
  const counter: CompositeController<typeof resource> = {
    type: 'composite',
    name: 'counter',
    resource,
    needs: [],
    childResources: [],
    hooks: { sync: (_request, { parent }) => ({ status: { syncs: Number((parent.object.status as Json | undefined)?.syncs ?? 0) + 1 }, children: [] }) }
  }
  const parent = { apiVersion: 'example.com/v1', kind: 'Counter', metadata: { name: 'c', namespace: 'default', uid: 'u', generation: 1 }, spec: {} }
  const plan = await planOne(counter as Controller, parent, [])
  assert.equal(plan.outcome, 'loops')
  assert.equal(plan.syncs, MAX_SYNCS)
  assert.deepEqual(plan.status.find((field) => field.field === 'syncs'), { field: 'syncs', to: MAX_SYNCS })
})
