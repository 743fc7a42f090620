import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ControllerPlan } from '../../../dev/plan/controller-plan.js'
import type { ParentPlan } from '../../../dev/plan/parent-plan.js'
import { exitCode, type ClusterPlan, type PlanHeading, type PlanReport } from '../../../dev/plan/plan-cluster.js'
import { fieldLine, JsonReport, parentDetails, rowLine, summaryTable, TextReport, type Write } from '../../../dev/plan/report.js'
import { selects, selectsAnnotations } from '../../../dev/plan/selectors.js'

const summary = { parents: 0, read: 0, unchanged: 0, change: 0, create: 0, refused: 0, rows: 0 }

function controller (name: string, counts: Partial<typeof summary>, parents: ParentPlan[] = []): ControllerPlan {
  return { controller: name, kind: 'CompositeController', summary: { ...summary, ...counts }, parents }
}

const resized: ParentPlan = {
  parent: { apiVersion: 'blog.velotio.com/v1alpha1', kind: 'BookStore', namespace: 'shop', name: 'books' },
  outcome: 'changes',
  hook: 'sync',
  syncs: 2,
  metadata: [],
  status: [
    { field: 'db.volumeSize', from: '2Gi', to: '3Gi' },
    { field: 'conditions[type=Ready].lastTransitionTime', from: '2026-11-22T10:00:00Z', to: '2026-11-22T12:00:00Z', stamped: true }
  ],
  objects: [
    { object: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'shop', name: 'data-books-mongodb-0' }, action: 'update', strategy: 'InPlace', fields: [{ field: 'spec.resources.requests.storage', from: '2Gi', to: '3Gi' }] },
    { object: { apiVersion: 'v1', kind: 'Service', namespace: 'shop', name: 'books-mongodb' }, action: 'unchanged' }
  ],
  rows: [],
  errors: []
}

test('exit codes as kubectl diff: 0 nothing changes, 1 something does, 2 the plan is not whole, 3 the new code refuses a parent', () => {
  assert.equal(exitCode([controller('a', { parents: 3, read: 9, unchanged: 9 })], []), 0)
  assert.equal(exitCode([controller('a', { change: 1 })], []), 1)
  assert.equal(exitCode([controller('a', { create: 1 })], []), 1)
  assert.equal(exitCode([controller('a', { rows: 1 })], []), 1)
  assert.equal(exitCode([controller('a', { change: 1, refused: 1 })], []), 3)
  assert.equal(exitCode([controller('a', { change: 1, refused: 1 })], ['postgres-writer: cannot connect']), 2)
})

test('the summary: one row per controller, a total, and a dash for a controller not planned', () => {
  const table = summaryTable([controller('bookstore', { parents: 1, read: 6, unchanged: 4, change: 2 }), { ...controller('podset', {}), skipped: 'not installed' }])
  assert.equal(table, [
    'CONTROLLER  PARENTS  OBJECTS READ  UNCHANGED  WOULD CHANGE  WOULD CREATE  REFUSED  ROW WRITES',
    'bookstore         1             6          4             2             0        0           0',
    'podset            -             -          -             -             -        -           -',
    'total             1             6          4             2             0        0           0'
  ].join('\n'))
})

test('a parent\'s details: each object by what happens to it, each field from and to, the time of the sync where the value is a time stamp', () => {
  assert.equal(parentDetails('bookstore', resized), [
    'bookstore › BookStore shop/books: would change (sync hook, 2 syncs)',
    '  update          PersistentVolumeClaim shop/data-books-mongodb-0 (InPlace)',
    '                    spec.resources.requests.storage: "2Gi" → "3Gi"',
    '  unchanged       Service shop/books-mongodb',
    '  status',
    '    db.volumeSize: "2Gi" → "3Gi"',
    '    conditions[type=Ready].lastTransitionTime: "2026-11-22T10:00:00Z" → (the time of the sync)'
  ].join('\n'))
  assert.equal(fieldLine({ field: 'labels.a', to: 'b' }), 'labels.a: (added) "b"')
  assert.equal(fieldLine({ field: 'conditions[type=Gone]', to: { type: 'Gone', lastTransitionTime: 'T' }, stamped: true }), 'conditions[type=Gone]: (added) {"type":"Gone","lastTransitionTime":"T"} (its time: the time of the sync)')
  assert.equal(fieldLine({ field: 'metadata.annotations["metacontroller.k8s.io/last-applied-configuration"]', from: '{}', to: '{"a":1}' }),
    'metadata.annotations["metacontroller.k8s.io/last-applied-configuration"]: the new answer, which the next three-way merge starts from')
  assert.equal(fieldLine({ field: 'labels.a', from: 'b' }), 'labels.a: "b" (removed)')
  assert.equal(fieldLine({ field: 'conditions[type=Ready].lastTransitionTime', from: 'T', to: 'U', stamped: true, mayStay: true }),
    'conditions[type=Ready].lastTransitionTime: "T" → (the time of the sync), or stays as it is if Metacontroller\'s last sync reads the status from before')
  assert.equal(fieldLine({ field: 'spec.args', from: ['x'.repeat(200)], to: [] }), `spec.args: ["${'x'.repeat(95)}... → []`)
  assert.equal(rowLine({ action: 'update', table: 'public.students', id: 'ns/a', columns: { age: { from: 23, to: 24 } } }), 'update public.students row "ns/a": age 23 → 24')
  assert.equal(rowLine({ action: 'insert', table: 'public.graduates', id: 'ns/a', columns: { name: { to: 'alex' }, age: { to: 23 } } }), 'insert into public.graduates row "ns/a": name "alex", age 23')
})

/** What a report writes for the plan, as it would write it: parent by parent, then each controller's totals, then the end. */
async function written (report: (heading: PlanHeading, write: Write) => PlanReport, plan: ClusterPlan): Promise<string> {
  let text = ''
  const writer = report({ planned: plan.planned, server: plan.server, context: plan.context, scope: plan.scope }, async (chunk) => { text += chunk })
  for (const { parents, ...totals } of plan.controllers) {
    for (const parent of parents) await writer.parent(totals, parent)
    await writer.controller(totals)
  }
  await writer.end(plan.controllers, plan.errors, plan.exitCode)
  return text
}

const reported: ClusterPlan = {
  planned: '2026-11-22T12:00:00Z',
  server: 'https://cluster:6443',
  context: 'prod',
  scope: { namespace: 'shop' },
  controllers: [
    controller('bookstore', { parents: 2, read: 4, unchanged: 2, change: 2 }, [resized, { ...resized, outcome: 'unchanged', parent: { ...resized.parent, name: 'quiet' } }]),
    controller('podset', {}),
    { ...controller('pulsar-consumer', {}), skipped: 'not installed' }
  ],
  errors: ['postgres-writer: cannot connect'],
  exitCode: 2
}

test('the report: where, when, the table, the parents that change, and what the exit code means', async () => {
  const text = await written((heading, write) => new TextReport(heading, write), reported)
  assert.match(text, /^Plan of this checkout's hooks against https:\/\/cluster:6443 \(context prod\), namespace shop, at 2026-11-22T12:00:00Z\n\nCONTROLLER/)
  assert.match(text, /\npulsar-consumer: not installed\n\nbookstore › BookStore shop\/books: would change/)
  assert.doesNotMatch(text, /quiet/)
  assert.match(text, /\n\nerror: postgres-writer: cannot connect\n\nexit 2: the plan could not be made, or not whole\n$/)
})

test('the JSON report, written parent by parent, is the whole plan as one document', async () => {
  const text = await written((heading, write) => new JsonReport(heading, write), reported)
  assert.deepEqual(JSON.parse(text), reported)
  const none = await written((heading, write) => new JsonReport(heading, write), { ...reported, context: undefined, controllers: [], exitCode: 0, errors: [] })
  assert.deepEqual(JSON.parse(none), { planned: reported.planned, server: reported.server, scope: reported.scope, controllers: [], errors: [], exitCode: 0 })
})

test('selectors as Metacontroller evaluates them: none or empty selects all; labels and expressions must all hold', () => {
  assert.equal(selects(undefined, {}), true)
  assert.equal(selects({}, { a: '1' }), true)
  assert.equal(selects({ matchLabels: { a: '1' } }, { a: '1', b: '2' }), true)
  assert.equal(selects({ matchLabels: { a: '1' } }, { a: '2' }), false)
  const expressions = { matchExpressions: [{ key: 'tier', operator: 'In' as const, values: ['gold'] }, { key: 'off', operator: 'DoesNotExist' as const }] }
  assert.equal(selects(expressions, { tier: 'gold' }), true)
  assert.equal(selects(expressions, { tier: 'gold', off: '' }), false)
  assert.equal(selects({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['gold'] }] }, {}), true)
  assert.equal(selectsAnnotations({ matchAnnotations: { 'x/y': 'z' } }, { 'x/y': 'z' }), true)
  assert.equal(selectsAnnotations({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }, undefined), false)
})
