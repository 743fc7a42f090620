import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { admin, callHook, ID, messageOf, readyOf, request, ROW_COLUMNS, rows } from './calls.js'

/**
 * Tables written by an earlier version, which recorded no placements: their rows are adopted once, by the first call
 * of this version, and found from then on wherever that version put them; replicas of that version fail from then on.
 */

const FINALIZED_UID = '33333333-3333-4333-8333-333333333333'

/**
 * The schema as an earlier version left it: its tombstones table (column `uid`) with one tombstone, the object's row in
 * students, a stray copy of it in alumni (a table a wider allowlist admitted then), and a row of another object.
 */
async function earlierVersion (app: TestApp): Promise<void> {
  await admin(app, `
    CREATE TABLE "postgres-writer-tombstones" (uid text PRIMARY KEY, id text NOT NULL, finalized_at timestamptz NOT NULL DEFAULT now());
    CREATE INDEX "postgres-writer-tombstones-finalized-at" ON "postgres-writer-tombstones" (finalized_at);
    INSERT INTO "postgres-writer-tombstones" (uid, id) VALUES ('${FINALIZED_UID}', 'default/finalized');
    CREATE TABLE students (${ROW_COLUMNS}); CREATE TABLE alumni (${ROW_COLUMNS});
    INSERT INTO students VALUES ('${ID}', 'alex', 23, 'canada'), ('default/other', 'other', 1, 'x');
    INSERT INTO alumni VALUES ('${ID}', 'stray copy', 20, 'canada')`)
}

/** The SQL of an earlier version's placement and finalize, as far as they touched its tombstones. */
const EARLIER_STATEMENTS = [
  `SELECT EXISTS (SELECT 1 FROM "postgres-writer-tombstones" WHERE uid = '${FINALIZED_UID}')`,
  'INSERT INTO "postgres-writer-tombstones" (uid, id) VALUES (\'uid\', \'default/x\') ON CONFLICT (uid) DO NOTHING'
]

test('the first call adopts the rows an earlier version wrote: a finalize deletes them from every table, however narrow the allowlist now', async (t) => {
  const app = await build(t, { env: { PG_TABLE_ALLOWLIST: 'students' } })
  await earlierVersion(app)
  assert.equal(readyOf(await callHook(app, request('sync-resync', { objectName: 'other', spec: { name: 'other', age: 1, country: 'x' } }))), 'True RowWritten')
  const finalized = await callHook(app, request('finalize'), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  assert.deepEqual((await rows(app, 'students')).map((row) => row.id), ['default/other'])
  assert.deepEqual(await rows(app, 'alumni'), [])
})

test('after the migration, a resync or a move of an object an earlier version wrote leaves one row; its tombstones still hold', async (t) => {
  const app = await build(t)
  await earlierVersion(app)
  assert.equal(readyOf(await callHook(app, request('sync-resync'))), 'True RowWritten')
  const moved = await callHook(app, request('sync-table-moved'))
  assert.equal(readyOf(moved), 'True RowWritten', messageOf(moved))
  assert.deepEqual([(await rows(app, 'students')).map((row) => row.id), await rows(app, 'alumni'), (await rows(app, 'graduates')).map((row) => row.name)],
    [['default/other'], [], ['alex']])
  const late = await callHook(app, request('sync-create', { objectName: 'finalized', uid: FINALIZED_UID }))
  assert.equal(readyOf(late), 'False RowDeleted', messageOf(late))
})

test('after the migration an earlier version\'s statements fail, so that no replica of it still running writes a row no placement records', async (t) => {
  const app = await build(t)
  await earlierVersion(app)
  assert.equal(readyOf(await callHook(app, request('sync-resync'))), 'True RowWritten')
  for (const statement of EARLIER_STATEMENTS) {
    await assert.rejects(admin(app, statement), { code: '42703' }, statement)
  }
})

test('two replicas starting together migrate once, and both answer', async (t) => {
  const first = await build(t)
  const second = await build(t, { env: { PG_SCHEMA: first.schema } })
  await earlierVersion(first)
  const answers = await Promise.all([
    callHook(first, request('sync-resync')),
    callHook(second, request('sync-resync', { objectName: 'other', spec: { name: 'other', age: 1, country: 'x' } }))
  ])
  assert.deepEqual(answers.map(readyOf), ['True RowWritten', 'True RowWritten'], answers.map(messageOf).join('; '))
  assert.equal((await callHook(second, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual([(await rows(first, 'students')).map((row) => row.id), await rows(first, 'alumni')], [['default/other'], []])
})

test('with PG_AUTO_CREATE_TABLES=false, calls are refused with the migration, which works when run by hand', async (t) => {
  const app = await build(t, { env: { PG_AUTO_CREATE_TABLES: 'false' } })
  await earlierVersion(app)
  const refused = await callHook(app, request('sync-resync'))
  assert.equal(readyOf(refused), 'False TableMissing', messageOf(refused))
  const finalize = await callHook(app, request('finalize'), 'finalize')
  assert.equal(finalize.json.finalized, false, 'the rows stay until the migration has recorded them')
  const migration = /migrate them in one transaction \((BEGIN; .* COMMIT;)\)/.exec(messageOf(refused))
  assert.ok(migration !== null, messageOf(refused))
  await admin(app, migration[1] as string)
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual([(await rows(app, 'students')).map((row) => row.id), await rows(app, 'alumni')], [['default/other'], []])
})

test('tables another version laid out otherwise: syncs and finalizes name the hook\'s own table and what it lacks, and write nothing', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  // As a later version might: its tombstones keyed by another column.
  await admin(app, 'ALTER TABLE "postgres-writer-tombstones" RENAME COLUMN object_uid TO object_key')
  for (const [hook, body] of [['sync', request('sync-age-changed')], ['finalize', request('finalize')]] as const) {
    const answer = await callHook(app, body, hook)
    assert.equal(readyOf(answer), 'False TableIncompatible', `${hook}: ${messageOf(answer)}`)
    assert.match(messageOf(answer), /the hook's own tables in schema \S+ are not laid out as this version of the hook reads them \(postgres-writer-tombstones\.object_uid missing\): another version changed them/, hook)
    assert.doesNotMatch(messageOf(answer), /cannot hold the row/, hook)
    if (hook === 'finalize') assert.equal(answer.json.finalized, false)
  }
  assert.deepEqual((await rows(app, 'students')).map((row) => [row.id, row.age]), [[ID, 23]])
})
