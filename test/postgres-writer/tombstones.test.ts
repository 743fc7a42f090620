import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { build, type TestApp } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { admin, callHook, messageOf, readyOf, request, ROW_COLUMNS, rows } from './calls.js'

/**
 * Finalize is never undone: the object's uid is tombstoned in finalize's transaction, and no write path of that uid
 * writes after it. Calls that Metacontroller sent before the finalize may arrive after it, even once the object was
 * created again under the same name (a new uid).
 */

const OLD_UID = '11111111-1111-4111-8111-111111111111'
const NEW_UID = '22222222-2222-4222-8222-222222222222'
const YOUNG_UID = '55555555-5555-4555-8555-555555555555'
const TOMBSTONES = 'postgres-writer-tombstones'

async function tombstones (t: TestApp): Promise<Array<{ uid: string, id: string }>> {
  const result = await (t.pool as pg.Pool).query(`SELECT object_uid AS uid, id FROM "${t.schema}"."${TOMBSTONES}" ORDER BY object_uid`)
  return result.rows
}

/** The object is created, finalized, and created again under the same name: the row is the new object's. */
async function recreated (app: TestApp): Promise<void> {
  assert.equal(readyOf(await callHook(app, request('sync-create', { uid: OLD_UID }))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize', { uid: OLD_UID }), 'finalize')).json.finalized, true)
  assert.equal(readyOf(await callHook(app, request('sync-create', { uid: NEW_UID, spec: { age: 30, name: 'sam' } }))), 'True RowWritten')
}

for (const [path, statusTable] of [['in place (the status names the table)', 'students'], ['by a placement (no table in the status)', null]] as const) {
  test(`a late sync of the old object, written ${path}, does not overwrite the new object's row`, async (t) => {
    const app = await build(t)
    await recreated(app)
    const late = await callHook(app, request('sync-age-changed', { uid: OLD_UID, statusTable }))
    assert.equal(late.statusCode, 200)
    assert.equal(readyOf(late), 'False RowDeleted', messageOf(late))
    assert.match(messageOf(late), new RegExp(`uid ${OLD_UID}`))
    assert.deepEqual(await rows(app, 'students'), [{ id: 'default/sample-student', name: 'sam', age: 30, country: 'canada' }])
  })
}

test('a placement that waited on the row\'s lock while a finalize committed sees the tombstone and writes nothing', async (t) => {
  const app = await build(t)
  // The row's lock is keyed by its id alone, in every schema: a name of this test's own keeps the hook calls of test
  // files running beside it on the same database out of the lock's queue, which fixes the order of the two calls below.
  const objectName = `racing-${randomBytes(6).toString('hex')}`
  // The tables exist, and the hook knows them (each call below takes the row's lock once); this object has no row yet.
  await callHook(app, request('sync-create', { objectName: 'other' }))
  const holder = new pg.Client({ connectionString: testDatabaseUrl() })
  await holder.connect()
  t.after(async () => { await holder.end() })
  await holder.query('BEGIN')
  await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`default/${objectName}`])
  const waiters = async (): Promise<number> => (await app.pool!.query(`SELECT count(*)::int AS n FROM pg_locks w JOIN pg_locks h USING (locktype, classid, objid, objsubid)
    WHERE w.locktype = 'advisory' AND NOT w.granted AND h.granted AND h.pid = $1`, [(holder as unknown as { processID: number }).processID])).rows[0].n
  const queued = async (count: number): Promise<void> => {
    for (let waited = 0; await waiters() < count; waited += 20) {
      assert.ok(waited < 5000, `${count} hook calls wait for the row's lock`)
      await sleep(20)
    }
  }

  // The finalize queues for the row's lock first, then the object's first sync: PostgreSQL grants the lock in that order,
  // so the sync's placement runs after the finalize committed, and must see its tombstone, though both were sent before.
  const finalize = callHook(app, request('finalize', { objectName, statusTable: null }), 'finalize')
  await queued(1)
  const sync = callHook(app, request('sync-create', { objectName }))
  await queued(2)
  await holder.query('COMMIT')
  const finalized = await finalize
  assert.equal(finalized.json.finalized, true, JSON.stringify(finalized.json))
  const synced = await sync
  assert.equal(readyOf(synced), 'False RowDeleted', messageOf(synced))
  assert.deepEqual((await rows(app, 'students')).map((row) => row.id), ['default/other'])
})

test('a late finalize of the old object does not delete the new object\'s row', async (t) => {
  const app = await build(t)
  await recreated(app)
  const late = await callHook(app, request('finalize', { uid: OLD_UID }), 'finalize')
  assert.equal(late.json.finalized, true)
  assert.equal(readyOf(late), 'False RowDeleted')
  assert.deepEqual((await rows(app, 'students')).map((r) => r.name), ['sam'])
})

test('a sync that arrives after its own object\'s finalize writes nothing', async (t) => {
  const app = await build(t)
  await callHook(app, request('sync-create'))
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  for (const name of ['sync-create', 'sync-resync', 'sync-table-moved'] as const) {
    const late = await callHook(app, request(name))
    assert.equal(readyOf(late), 'False RowDeleted', `${name}: ${messageOf(late)}`)
    assert.equal(late.json.resyncAfterSeconds, 60)
  }
  assert.deepEqual(await rows(app, 'students'), [])
  assert.deepEqual(await rows(app, 'graduates').catch(() => []), [])
})

test('tombstones live in a table no PostgresWriter can name, and go once older than 10 minutes', async (t) => {
  const app = await build(t)
  await callHook(app, request('sync-create', { uid: OLD_UID }))
  await callHook(app, request('finalize', { uid: OLD_UID }), 'finalize')
  assert.deepEqual(await tombstones(app), [{ uid: OLD_UID, id: 'default/sample-student' }])

  const named = await callHook(app, request('sync-create', { uid: NEW_UID, spec: { table: TOMBSTONES } }))
  assert.equal(readyOf(named), 'False InvalidTableName')

  // A tombstone older than the retention of 10 minutes goes with the next finalize; a younger one stays.
  await callHook(app, request('sync-create', { uid: YOUNG_UID, objectName: 'young' }))
  await callHook(app, request('finalize', { uid: YOUNG_UID, objectName: 'young' }), 'finalize')
  await admin(app, `UPDATE "${TOMBSTONES}" SET finalized_at = now() - interval '11 minutes' WHERE object_uid = '${OLD_UID}';
    UPDATE "${TOMBSTONES}" SET finalized_at = now() - interval '9 minutes' WHERE object_uid = '${YOUNG_UID}'`)
  await callHook(app, request('sync-create', { uid: NEW_UID, objectName: 'other' }))
  await callHook(app, request('finalize', { uid: NEW_UID, objectName: 'other' }), 'finalize')
  assert.deepEqual(await tombstones(app), [{ uid: NEW_UID, id: 'default/other' }, { uid: YOUNG_UID, id: 'default/young' }])
})

test('a finalize repeated after the retention keeps its own tombstone: a sync after it still writes nothing', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  // Metacontroller calls finalize again while something else holds the object, at every resync.
  await admin(app, `UPDATE "${TOMBSTONES}" SET finalized_at = now() - interval '11 minutes'`)
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual((await tombstones(app)).map((row) => row.uid), [request('finalize').object.metadata.uid], 'the repeated finalize kept its tombstone')
  const fresh = await (app.pool as pg.Pool).query(`SELECT finalized_at > now() - interval '1 minute' AS fresh FROM "${app.schema}"."${TOMBSTONES}"`)
  assert.equal(fresh.rows[0].fresh, true, 'and refreshed it')
  const late = await callHook(app, request('sync-resync'))
  assert.equal(readyOf(late), 'False RowDeleted', messageOf(late))
  assert.deepEqual(await rows(app, 'students'), [])
})

test('a tombstones table dropped while the server runs is created again by the next finalize', async (t) => {
  const app = await build(t)
  await callHook(app, request('sync-create', { uid: OLD_UID }))
  await admin(app, `DROP TABLE "${TOMBSTONES}"`)
  assert.equal((await callHook(app, request('finalize', { uid: OLD_UID }), 'finalize')).json.finalized, true)
  assert.deepEqual(await tombstones(app), [{ uid: OLD_UID, id: 'default/sample-student' }])
  assert.deepEqual(await rows(app, 'students'), [])
})

test('with PG_AUTO_CREATE_TABLES=false, a sync without the hook\'s tables is refused with their DDL, which works; a finalize goes on', async (t) => {
  const app = await build(t, { env: { PG_AUTO_CREATE_TABLES: 'false' } })
  await admin(app, `CREATE TABLE students (${ROW_COLUMNS})`)
  const refused = await callHook(app, request('sync-create'))
  assert.equal(readyOf(refused), 'False TableMissing', messageOf(refused))
  assert.match(messageOf(refused), new RegExp(`CREATE TABLE "${app.schema}"\\."${TOMBSTONES}"`))
  assert.deepEqual(await rows(app, 'students'), [], 'no row is written without the hook\'s tables')
  // No sync wrote without them, so a finalize has nothing to delete: a row there is not the hook's, and stays.
  await admin(app, 'INSERT INTO students VALUES (\'default/sample-student\', \'left\', 1, \'by someone else\')')
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual((await rows(app, 'students')).map((row) => row.name), ['left'])
  await admin(app, 'DELETE FROM students')

  const ddl = /create them \(((?:CREATE [^;]*; ?)+)\)/.exec(messageOf(refused))
  assert.ok(ddl !== null, messageOf(refused))
  await admin(app, ddl[1] as string)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual(await tombstones(app), [{ uid: request('finalize').object.metadata.uid, id: 'default/sample-student' }])
  assert.deepEqual(await rows(app, 'students'), [])
})
