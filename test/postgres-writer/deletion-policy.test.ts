import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { callHook, ID, messageOf, readyOf, request, rowsEverywhere } from './calls.js'

/** spec.deletionPolicy: Delete (the default) deletes the row with the object; Orphan keeps it, for the next owner. */

const NEW_UID = '44444444-4444-4444-8444-444444444444'
const ORPHAN = { deletionPolicy: 'Orphan' }

async function everyRow (app: TestApp): Promise<string[]> {
  return (await rowsEverywhere(app)).map((row) => `${row.table}: ${row.id} ${row.name} ${row.age}`)
}

test('Orphan: the finalize keeps the row and answers finalized: true; a late sync of the object writes nothing', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create', { spec: ORPHAN }))), 'True RowWritten')
  const finalized = await callHook(app, request('finalize', { spec: ORPHAN }), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  assert.equal(readyOf(finalized), 'False RowOrphaned')
  assert.match(messageOf(finalized), new RegExp(`kept in ${app.schema}\\.students \\(spec\\.deletionPolicy: Orphan\\)`))
  assert.deepEqual(await everyRow(app), [`students: ${ID} alex 23`])
  const late = await callHook(app, request('sync-age-changed', { spec: ORPHAN }))
  assert.equal(readyOf(late), 'False RowDeleted', messageOf(late))
  assert.deepEqual(await everyRow(app), [`students: ${ID} alex 23`])
})

test('Orphan: a new object of the same name takes the row over, wherever its table is', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create', { spec: ORPHAN }))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize', { spec: ORPHAN }), 'finalize')).json.finalized, true)
  assert.equal(readyOf(await callHook(app, request('sync-create', { uid: NEW_UID, spec: { age: 30 } }))), 'True RowWritten')
  assert.deepEqual(await everyRow(app), [`students: ${ID} alex 30`])
  assert.equal(readyOf(await callHook(app, request('sync-create', { uid: NEW_UID, spec: { table: 'graduates', age: 31 }, statusTable: null }))), 'True RowWritten')
  assert.deepEqual(await everyRow(app), [`graduates: ${ID} alex 31`])
  // It is the new object's row now: its finalize deletes it.
  assert.equal((await callHook(app, request('finalize', { uid: NEW_UID, spec: { table: 'graduates' }, statusTable: 'graduates' }), 'finalize')).json.finalized, true)
  assert.deepEqual(await everyRow(app), [])
})

test('Orphan: a new object of the same name that never wrote the row does not delete it when it goes', async (t) => {
  const app = await build(t, { env: { PG_TABLE_ALLOWLIST: 'students' } })
  assert.equal(readyOf(await callHook(app, request('sync-create', { spec: ORPHAN }))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize', { spec: ORPHAN }), 'finalize')).json.finalized, true)
  const refused = await callHook(app, request('sync-create', { uid: NEW_UID, spec: { table: 'graduates' } }))
  assert.equal(readyOf(refused), 'False TableNotAllowed')
  assert.equal((await callHook(app, request('finalize', { uid: NEW_UID, spec: { table: 'graduates' }, statusTable: null }), 'finalize')).json.finalized, true)
  assert.deepEqual(await everyRow(app), [`students: ${ID} alex 23`])
})

test('Orphan when the object leaves the selector: the row stays, and the object manages it again once it matches', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create', { spec: ORPHAN }))), 'True RowWritten')
  const released = await callHook(app, request('finalize', { spec: ORPHAN, notDeleting: true }), 'finalize')
  assert.equal(readyOf(released), 'False RowOrphaned')
  assert.match(messageOf(released), /manages its row again once it matches/)
  assert.deepEqual(await everyRow(app), [`students: ${ID} alex 23`])
  const matched = await callHook(app, request('sync-age-changed', { spec: ORPHAN, status: released.json.status }))
  assert.equal(readyOf(matched), 'True RowWritten', messageOf(matched))
  assert.deepEqual(await everyRow(app), [`students: ${ID} alex 24`])
})

for (const [what, spec] of [['no deletionPolicy (the original samples)', {}], ['deletionPolicy: Delete', { deletionPolicy: 'Delete' }]] as const) {
  test(`${what}: the finalize deletes the row`, async (t) => {
    const app = await build(t)
    assert.equal(readyOf(await callHook(app, request('sync-create', { spec }))), 'True RowWritten')
    const finalized = await callHook(app, request('finalize', { spec }), 'finalize')
    assert.equal(readyOf(finalized), 'False RowDeleted')
    assert.deepEqual(await everyRow(app), [])
  })
}

test('a stored deletionPolicy the hook cannot read: the finalize waits, with Ready=False InvalidSpec naming it, and the row stays', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  const finalize = await callHook(app, request('finalize', { spec: { deletionPolicy: 'Retain' } }), 'finalize')
  assert.equal(finalize.statusCode, 200)
  assert.equal(finalize.json.finalized, false)
  assert.equal(readyOf(finalize), 'False InvalidSpec')
  assert.match(messageOf(finalize), /^PostgresWriter spec cannot be used: spec\.deletionPolicy: "Retain" is neither Delete nor Orphan/)
  assert.equal(finalize.json.resyncAfterSeconds, undefined, 'as any InvalidSpec: the next call comes with a change of the object, or at the next resync')
  assert.deepEqual(await everyRow(app), [`students: ${ID} alex 23`])
})
