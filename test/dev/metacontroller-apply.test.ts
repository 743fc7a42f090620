import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ChildResource } from '../../hooks/framework/controller.js'
import { podSet } from '../../hooks/podset/index.js'
import type { CompositeRequest, CompositeResponse } from '../../hooks/framework/wire/schemas.js'
import { planSync } from '../../dev/metacontroller-apply.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'

type Json = Record<string, any>

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
