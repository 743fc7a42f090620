import assert from 'node:assert/strict'
import { test } from 'node:test'
import { MAX_PREPARED_PER_CONNECTION } from '../../hooks/database/prepared-statements.js'
import { build, type TestApp } from '../helpers/app.js'
import { admin, callHook, messageOf, readyOf, request, rows } from './calls.js'

/**
 * Named prepared statements (PG_PREPARED_STATEMENTS). Each test runs the app on a pool of one connection, so the
 * test's own queries through the app's pool (`onTheConnection`) see the very session the hook calls use.
 */

const ONE_CONNECTION = { PG_POOL_MAX: '1' }

async function onTheConnection<R> (app: TestApp, sql: string): Promise<R> {
  return (await app.pool!.query(sql)).rows[0] as R
}

async function preparedCount (app: TestApp): Promise<number> {
  return (await onTheConnection<{ count: number }>(app, "SELECT count(*)::int AS count FROM pg_prepared_statements WHERE name LIKE 'hooks\\_%'")).count
}

async function backend (app: TestApp): Promise<number> {
  return (await onTheConnection<{ pid: number }>(app, 'SELECT pg_backend_pid() AS pid')).pid
}

async function expectWritten (app: TestApp, body: Record<string, any>, age: number): Promise<void> {
  const answer = await callHook(app, body)
  assert.equal(readyOf(answer), 'True RowWritten', messageOf(answer))
  assert.deepEqual((await rows(app, 'students')).map((row) => Number(row.age)), [age])
}

test('statements are prepared once per connection, and resyncs reuse them', async (t) => {
  const app = await build(t, { env: ONE_CONNECTION })
  await expectWritten(app, request('sync-create'), 23)
  const afterCreate = await preparedCount(app)
  assert.ok(afterCreate > 0, 'the create prepared its statements')
  for (let i = 0; i < 8; i++) await expectWritten(app, request('sync-resync'), 23)
  await expectWritten(app, request('sync-age-changed'), 24)
  const afterUpdate = await preparedCount(app)
  for (let i = 0; i < 8; i++) await expectWritten(app, request('sync-age-changed'), 24)
  assert.equal(await preparedCount(app), afterUpdate, 'the same statements again: nothing new is prepared')
})

test('PG_PREPARED_STATEMENTS=false prepares nothing', async (t) => {
  const app = await build(t, { env: { ...ONE_CONNECTION, PG_PREPARED_STATEMENTS: 'false' } })
  await expectWritten(app, request('sync-create'), 23)
  await expectWritten(app, request('sync-age-changed'), 24)
  assert.equal(await preparedCount(app), 0)
})

test('a table altered, or dropped and created again, under prepared statements: the next sync writes the row', async (t) => {
  const app = await build(t, { env: ONE_CONNECTION })
  await expectWritten(app, request('sync-create'), 23)
  // Past PostgreSQL's five custom plans, so that a generic plan is cached too.
  for (let i = 0; i < 6; i++) await expectWritten(app, request('sync-resync'), 23)
  const connection = await backend(app)

  await admin(app, 'ALTER TABLE students ALTER COLUMN age TYPE bigint')
  await expectWritten(app, request('sync-age-changed'), 24)

  await admin(app, 'ALTER TABLE students DROP COLUMN country; ALTER TABLE students ADD COLUMN country text')
  await expectWritten(app, request('sync-age-changed'), 24)
  assert.equal((await rows(app, 'students'))[0]?.country, 'canada')

  await admin(app, `DROP TABLE students; CREATE TABLE students (country varchar(40) NOT NULL, id varchar(300) PRIMARY KEY,
    age integer NOT NULL, extra text DEFAULT 'x', name varchar(100) NOT NULL)`)
  await expectWritten(app, request('sync-resync'), 23)

  await admin(app, 'ALTER TABLE students ALTER COLUMN age TYPE text')
  const refused = await callHook(app, request('sync-age-changed'))
  assert.equal(readyOf(refused), 'False TableIncompatible', messageOf(refused))
  await admin(app, 'ALTER TABLE students ALTER COLUMN age TYPE integer USING age::integer')
  await expectWritten(app, request('sync-age-changed'), 24)
  assert.equal(await backend(app), connection, 'PostgreSQL replanned the statements: the connection was kept')
})

test('prepared statements that vanished from the connection (as behind a pooler that lost them): the call runs them unnamed, and the connection is replaced', async (t) => {
  const app = await build(t, { env: ONE_CONNECTION })
  await expectWritten(app, request('sync-create'), 23)
  await expectWritten(app, request('sync-resync'), 23)

  // The driver still takes them for prepared on this connection: its next Bind names a statement PostgreSQL lacks.
  const connection = await backend(app)
  await app.pool!.query('DEALLOCATE ALL')
  await expectWritten(app, request('sync-age-changed'), 24)
  const replacement = await backend(app)
  assert.notEqual(replacement, connection, 'the connection whose statements failed was discarded')
  await expectWritten(app, request('sync-age-changed'), 24)
  assert.ok(await preparedCount(app) > 0, 'the new connection prepares again')

  // A finalize of another object prepares the statements of a finalize, which the next one then reuses.
  const other = await callHook(app, request('finalize', { objectName: 'other-student', uid: 'other-uid' }), 'finalize')
  assert.equal(other.json.finalized, true, messageOf(other))
  await app.pool!.query('DEALLOCATE ALL')
  const finalized = await callHook(app, request('finalize'), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  assert.deepEqual(await rows(app, 'students'), [])
  assert.notEqual(await backend(app), replacement)
})

test(`one connection prepares at most ${MAX_PREPARED_PER_CONNECTION} statements, however many tables there are`, async (t) => {
  const app = await build(t, { env: ONE_CONNECTION })
  const tables = Array.from({ length: MAX_PREPARED_PER_CONNECTION + 6 }, (_, i) => `table_${i}`)
  for (const table of tables) {
    const answer = await callHook(app, request('sync-create', { objectName: table.replace('_', '-'), spec: { table } }))
    assert.equal(readyOf(answer), 'True RowWritten', messageOf(answer))
  }
  assert.equal(await preparedCount(app), MAX_PREPARED_PER_CONNECTION)
  for (const table of tables.slice(-3)) {
    const answer = await callHook(app, request('sync-resync', { objectName: table.replace('_', '-'), spec: { table } }))
    assert.equal(readyOf(answer), 'True RowWritten', `${table}: ${messageOf(answer)}`)
  }
})
