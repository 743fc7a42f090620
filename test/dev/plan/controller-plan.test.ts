import assert from 'node:assert/strict'
import { test } from 'node:test'
import { podSet } from '../../../hooks/podset/index.js'
import { planController } from '../../../dev/plan/controller-plan.js'
import { fixture } from '../../helpers/fixtures.js'
import { childrenOf, modelOf, PLANNED_AT, planRunner } from '../../helpers/plan.js'

type Json = Record<string, any>

/** The fixture's parent and children, moved to another namespace and given another uid. */
function elsewhere (name: string, namespace: string, uid: string): { parent: Json, children: Json[] } {
  const request = fixture(podSet.name, name)
  const text = JSON.stringify({ parent: request.parent, children: childrenOf(request) })
    .replaceAll(request.parent.metadata.uid, uid).replaceAll('"namespace":"default"', `"namespace":"${namespace}"`).replaceAll('\\"namespace\\":\\"default\\"', `\\"namespace\\":\\"${namespace}\\"`)
  return JSON.parse(text)
}

test('each parent is planned with the children it controls, in its namespace, from one list per kind; the summary counts them', async () => {
  const quiet = elsewhere('steady-state', 'one', 'uid-one')
  const scaled = elsewhere('scale-down', 'two', 'uid-two')
  const ignored = { ...elsewhere('steady-state', 'three', 'uid-three').parent, metadata: { ...quiet.parent.metadata, namespace: 'three', uid: 'uid-three', labels: { tier: 'bronze' } } }
  const model = modelOf(podSet, { parentResource: { apiVersion: 'batch.tutorial.kubebuilder.io/v1', resource: 'podsets', labelSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['bronze'] }] } } })
  const progress: number[] = []
  const plan = await planController({ controller: podSet, model, parents: [quiet.parent, scaled.parent, ignored], children: [...quiet.children, ...scaled.children] }, {
    now: PLANNED_AT,
    run: planRunner,
    progress: (done) => { progress.push(done) }
  })
  assert.deepEqual(plan.parents.map((parent) => [parent.parent.namespace, parent.outcome]), [['one', 'unchanged'], ['two', 'changes']])
  assert.deepEqual(plan.parents[1]?.objects.map((object) => `${object.action} ${object.object.namespace}/${object.object.name}`), [
    'delete two/sleepers-pod-1', 'delete two/sleepers-pod-2', 'delete two/sleepers-pod-3', 'delete two/sleepers-pod-4', 'unchanged two/sleepers-pod-0'
  ])
  assert.deepEqual(plan.summary, { parents: 2, read: 10, unchanged: 5, change: 5, create: 0, refused: 0, rows: 0 })
  assert.deepEqual(progress, [1, 2, 3])
})

test('a controller not installed, or with what the plan cannot follow, is not planned, and says why', async () => {
  const run = planRunner
  const missing = await planController({ controller: podSet, model: undefined, parents: [], children: [] }, { now: PLANNED_AT, run })
  assert.match(missing.skipped ?? '', /^CompositeController podset is not installed in this cluster/)
  const rolling = modelOf(podSet, { childResources: [{ apiVersion: 'v1', resource: 'pods', updateStrategy: { method: 'RollingRecreate' } }] })
  assert.match((await planController({ controller: podSet, model: rolling, parents: [], children: [] }, { now: PLANNED_AT, run })).skipped ?? '', /updates pods with RollingRecreate, for which Metacontroller calls the hook once per revision: not planned/)
  const customized = modelOf(podSet, { hooks: { sync: { webhook: { url: 'http://x' } }, customize: { webhook: { url: 'http://x' } } } })
  assert.match((await planController({ controller: podSet, model: customized, parents: [], children: [] }, { now: PLANNED_AT, run })).skipped ?? '', /has a customize hook/)
})
