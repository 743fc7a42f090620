import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { podSet } from '../../../hooks/podset/index.js'
import { planController, type ControllerRead } from '../../../dev/plan/controller-plan.js'
import { ChildSpool } from '../../../dev/plan/child-spool.js'
import type { ControllerObject } from '../../../dev/plan/controller-objects.js'
import type { ParentPlan } from '../../../dev/plan/parent-plan.js'
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

/** PodSet's parents in pages, and `children` spooled; the spool is closed after the test. */
function read (t: TestContext, model: ControllerObject | undefined, pages: Iterable<Json[]> | AsyncIterable<Json[]>, children: Json[]): ControllerRead {
  const spool = new ChildSpool()
  t.after(() => { spool.close() })
  for (const child of children) spool.add(child)
  return { controller: podSet, model, pages, children: spool }
}

test('each parent is planned with the children it controls, in its namespace, a page of parents at a time; the summary counts them', async (t) => {
  const quiet = elsewhere('steady-state', 'one', 'uid-one')
  const scaled = elsewhere('scale-down', 'two', 'uid-two')
  const ignored = { ...elsewhere('steady-state', 'three', 'uid-three').parent, metadata: { ...quiet.parent.metadata, namespace: 'three', uid: 'uid-three', labels: { tier: 'bronze' } } }
  const model = modelOf(podSet, { parentResource: { apiVersion: 'batch.tutorial.kubebuilder.io/v1', resource: 'podsets', labelSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['bronze'] }] } } })
  const progress: number[] = []
  const parents: ParentPlan[] = []
  const plan = await planController(read(t, model, [[quiet.parent, scaled.parent], [ignored]], [...quiet.children, ...scaled.children]), {
    now: PLANNED_AT,
    run: planRunner,
    parent: (planned) => { parents.push(planned) },
    progress: (done) => { progress.push(done) },
    failed: (error) => { throw error }
  })
  assert.deepEqual(parents.map((parent) => [parent.parent.namespace, parent.outcome]), [['one', 'unchanged'], ['two', 'changes']])
  assert.deepEqual(parents[1]?.objects.map((object) => `${object.action} ${object.object.namespace}/${object.object.name}`), [
    'delete two/sleepers-pod-1', 'delete two/sleepers-pod-2', 'delete two/sleepers-pod-3', 'delete two/sleepers-pod-4', 'unchanged two/sleepers-pod-0'
  ])
  assert.deepEqual(plan.summary, { parents: 2, read: 10, unchanged: 5, change: 5, create: 0, refused: 0, rows: 0 })
  assert.deepEqual(progress, [1, 2, 3])
})

test('a page that cannot be read ends the controller\'s plan there: the parents before it are planned and counted', async (t) => {
  const quiet = elsewhere('steady-state', 'one', 'uid-one')
  async function * pages (): AsyncGenerator<Json[]> {
    yield [quiet.parent]
    throw new Error('GET /apis/batch.tutorial.kubebuilder.io/v1/podsets answered 500: etcd is down')
  }
  const failures: string[] = []
  const plan = await planController(read(t, modelOf(podSet), pages(), quiet.children), { now: PLANNED_AT, run: planRunner, failed: (error) => { failures.push(error.message) } })
  assert.deepEqual(failures, ['GET /apis/batch.tutorial.kubebuilder.io/v1/podsets answered 500: etcd is down'])
  assert.equal(plan.summary.parents, 1)
  assert.equal(plan.summary.unchanged, 4)
})

test('a controller not installed, or with what the plan cannot follow, is not planned, and says why', async (t) => {
  const context = { now: PLANNED_AT, run: planRunner, failed: (error: Error) => { throw error } }
  const missing = await planController(read(t, undefined, [], []), context)
  assert.match(missing.skipped ?? '', /^CompositeController podset is not installed in this cluster/)
  const rolling = modelOf(podSet, { childResources: [{ apiVersion: 'v1', resource: 'pods', updateStrategy: { method: 'RollingRecreate' } }] })
  assert.match((await planController(read(t, rolling, [], []), context)).skipped ?? '', /updates pods with RollingRecreate, for which Metacontroller calls the hook once per revision: not planned/)
  const customized = modelOf(podSet, { hooks: { sync: { webhook: { url: 'http://x' } }, customize: { webhook: { url: 'http://x' } } } })
  assert.match((await planController(read(t, customized, [], []), context)).skipped ?? '', /has a customize hook/)
})
