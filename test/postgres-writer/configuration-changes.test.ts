import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { admin, callHook, ID, messageOf, readyOf, request, ROW_COLUMNS, rows, rowsEverywhere } from './calls.js'

/**
 * One row per resource, and "finalize deletes the row", across changes of configuration: replicas that differ in
 * PG_TABLE_ALLOWLIST or PG_AUTO_CREATE_TABLES (a rollout), on one schema.
 */

/** Two apps on one schema, as two replicas of a rollout: `first` with `env`, `second` with `otherEnv`. */
async function replicas (t: Parameters<typeof build>[0], env: Record<string, string>, otherEnv: Record<string, string>): Promise<[TestApp, TestApp]> {
  const first = await build(t, { env })
  const second = await build(t, { env: { ...otherEnv, PG_SCHEMA: first.schema } })
  return [first, second]
}

async function rowTables (app: TestApp): Promise<string[]> {
  return (await rowsEverywhere(app)).filter((row) => row.id === ID).map((row) => row.table)
}

const WIDE = { PG_TABLE_ALLOWLIST: 'students,graduates,alumni' }
const NARROW = { PG_TABLE_ALLOWLIST: 'students' }

test('a row the wide replica put in a table the narrow one may not write is deleted by a finalize on the narrow one', async (t) => {
  const [wide, narrow] = await replicas(t, WIDE, NARROW)
  assert.equal(readyOf(await callHook(wide, request('sync-create', { spec: { table: 'alumni' } }))), 'True RowWritten')
  const finalized = await callHook(narrow, request('finalize', { spec: { table: 'alumni' }, statusTable: 'alumni' }), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  assert.deepEqual(await rowTables(wide), [])
})

test('a table move on the narrow replica takes the row out of the table the wide one put it in', async (t) => {
  const [wide, narrow] = await replicas(t, WIDE, NARROW)
  assert.equal(readyOf(await callHook(wide, request('sync-create', { spec: { table: 'alumni' } }))), 'True RowWritten')
  const moved = await callHook(narrow, request('sync-age-changed', { spec: { table: 'students' }, statusTable: 'alumni' }))
  assert.equal(readyOf(moved), 'True RowWritten', messageOf(moved))
  assert.deepEqual(await rowTables(wide), ['students'])
  // The wide replica's resyncs keep that one row.
  assert.equal(readyOf(await callHook(wide, request('sync-age-changed', { spec: { table: 'students' } }))), 'True RowWritten')
  assert.deepEqual(await rowTables(wide), ['students'])
  assert.equal((await callHook(wide, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual(await rowTables(wide), [])
})

test('a move whose answer was lost, then a finalize on a replica that may not write the new table: no row left', async (t) => {
  const [narrow, wide] = await replicas(t, NARROW, WIDE)
  assert.equal(readyOf(await callHook(narrow, request('sync-create'))), 'True RowWritten')
  // The move to graduates committed on the wide replica; Metacontroller never got the answer: the status says students.
  assert.equal(readyOf(await callHook(wide, request('sync-table-moved'))), 'True RowWritten')
  const finalized = await callHook(narrow, request('finalize', { spec: { table: 'graduates' }, statusTable: 'students' }), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  assert.deepEqual(await rowTables(narrow), [])
})

test('PG_AUTO_CREATE_TABLES differing between replicas: the row is found and deleted wherever it was written', async (t) => {
  const [creating, notCreating] = await replicas(t, {}, { PG_AUTO_CREATE_TABLES: 'false' })
  assert.equal(readyOf(await callHook(creating, request('sync-create', { spec: { table: 'alumni' } }))), 'True RowWritten')
  const moved = await callHook(notCreating, request('sync-age-changed', { spec: { table: 'alumni' }, statusTable: null }))
  assert.equal(readyOf(moved), 'True RowWritten', messageOf(moved))
  assert.equal(readyOf(await callHook(creating, request('sync-table-moved', { statusTable: 'alumni' }))), 'True RowWritten')
  assert.deepEqual(await rowTables(creating), ['graduates'])
  const finalized = await callHook(notCreating, request('finalize', { statusTable: null }), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  assert.deepEqual(await rowTables(creating), [])
})

test('a row the hook did not write is never deleted: one of the same id in another table stays through placements and the finalize', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  await admin(app, `CREATE TABLE alumni (${ROW_COLUMNS});
    INSERT INTO alumni VALUES ('${ID}', 'written by someone else', 40, 'peru')`)
  assert.equal(readyOf(await callHook(app, request('sync-table-moved'))), 'True RowWritten')
  assert.equal(readyOf(await callHook(app, request('sync-create', { statusTable: null }))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual(await rows(app, 'alumni'), [{ id: ID, name: 'written by someone else', age: 40, country: 'peru' }])
  assert.deepEqual(await rowTables(app), ['alumni'])
})
