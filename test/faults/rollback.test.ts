import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startPostgres } from '../../dev/postgres-process.js'
import { downgradeDdl } from '../../hooks/postgres-writer/statements.js'
import { checkoutOf, versionWithoutPlacements } from './earlier-version.js'
import { outcomeOf } from './hook-calls.js'
import { startHookServer, testSchema } from './hook-server.js'
import { assertRowsMatchWriters } from './rows.js'
import { rowsById } from '../helpers/postgres-writer-rows.js'
import { Writer, type WriterSpec } from './writers.js'

/**
 * A rollback as an operator makes it: this version migrated the hook's tables; the hook server is rolled back to the
 * last version without placement records, taken from the repository's history and run as a process on the same
 * database; it fails, writing nothing, until the way back of docs/postgres-writer.md gives the tables its layout;
 * then it writes and deletes rows; and upgrading to this version again adopts what it wrote.
 */

const spec = (table: string, age: number): WriterSpec => ({ table, name: 'rolled', age, country: 'peru' })

test('rolled back to a version without placement records: it fails until the way back, then works, and upgrading again adopts its rows', async (t) => {
  const earlier = await checkoutOf(t, versionWithoutPlacements())
  const postgres = await startPostgres()
  t.after(async () => { await postgres.remove() })
  const env = { DATABASE_URL: postgres.connectionString, PG_SCHEMA: testSchema() }
  const admin = await postgres.connect()
  const kept = new Writer('kept', spec('students', 1))
  const deleted = new Writer('deleted', spec('graduates', 2))
  const createdMeanwhile = new Writer('created-meanwhile', spec('students', 3))
  const writers = [kept, deleted, createdMeanwhile]

  const current = await startHookServer(t, env)
  for (const writer of [kept, deleted]) assert.equal(outcomeOf(await writer.call(current)), 'Ready')
  await current.stop()

  const rolledBack = await startHookServer(t, env, { checkout: earlier })
  kept.edit(spec('students', 10))
  deleted.delete()
  const failed = [await kept.call(rolledBack), await deleted.call(rolledBack)]
  assert.deepEqual(failed.map(outcomeOf), ['Ready=False TableIncompatible', 'finalized=false TableIncompatible'])
  assert.match(failed[0]?.body.status.conditions[0].message, /column "uid" does not exist/, 'the failure the rollback section names')
  const untouched = [...(await rowsById(admin, env.PG_SCHEMA)).values()].flat().map((row) => `${row.id} ${row.table} ${row.age}`).sort()
  assert.deepEqual(untouched, ['default/deleted graduates 2', 'default/kept students 1'], 'nothing written or deleted meanwhile')

  await admin.query(`BEGIN; ${downgradeDdl(env.PG_SCHEMA).map((statement) => `${statement};`).join(' ')} COMMIT;`)
  assert.equal(outcomeOf(await kept.call(rolledBack)), 'Ready')
  assert.equal(outcomeOf(await deleted.call(rolledBack)), 'finalized')
  assert.equal(outcomeOf(await createdMeanwhile.call(rolledBack)), 'Ready')
  await assertRowsMatchWriters(admin, env.PG_SCHEMA, writers)
  await rolledBack.stop()

  const upgraded = await startHookServer(t, env)
  for (const writer of [kept, createdMeanwhile]) assert.equal(outcomeOf(await writer.call(upgraded)), 'Ready', writer.name)
  await assertRowsMatchWriters(admin, env.PG_SCHEMA, writers)
  for (const writer of [kept, createdMeanwhile]) {
    writer.delete()
    assert.equal(outcomeOf(await writer.call(upgraded)), 'finalized', writer.name)
  }
  await assertRowsMatchWriters(admin, env.PG_SCHEMA, writers)
})
