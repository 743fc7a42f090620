import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { kubernetesTime } from '../../../hooks/framework/wire/conditions.js'
import { postgresWriter } from '../../../hooks/postgres-writer/index.js'
import { postgresWriterSettings } from '../../../hooks/postgres-writer/settings.js'
import { hookRunner } from '../../../dev/plan/hook-runner.js'
import { readOnlyPool } from '../../../dev/plan/plan-cluster.js'
import { forecastingWriter, readRowSnapshot, RowForecast, type RowEffect } from '../../../dev/plan/postgres-writer.js'
import { connectionFromUrl } from '../../../hooks/database/connection.js'
import { build, NOW, type TestApp } from '../../helpers/app.js'
import { testDatabaseUrl } from '../../helpers/database-url.js'
import { admin, callHook, request, ROW_COLUMNS } from '../../postgres-writer/calls.js'

type Json = Record<string, any>

/** Every row of every table of the schema, the hook's own included, with its xmin: what a read-only plan leaves alone. */
async function everyRow (t: TestApp): Promise<Map<string, { row: Json, xmin: string }>> {
  const pool = t.pool as pg.Pool
  const tables = await pool.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1', [t.schema])
  const rows = new Map<string, { row: Json, xmin: string }>()
  for (const { tablename } of tables.rows) {
    for (const { xmin, ...row } of (await pool.query(`SELECT xmin::text AS xmin, * FROM "${t.schema}"."${tablename}"`)).rows) {
      rows.set(`${tablename} ${String(row.id ?? row.object_uid)} ${String(row.table_name ?? '')}`, { row, xmin })
    }
  }
  return rows
}

/** What the hook did to PostgresWriter's rows between two reads, as the plan names it. */
function effectsBetween (schema: string, before: Map<string, { row: Json, xmin: string }>, after: Map<string, { row: Json, xmin: string }>): string[] {
  const rowKey = (key: string): boolean => !key.startsWith('postgres-writer-')
  const effects: string[] = []
  for (const key of [...new Set([...before.keys(), ...after.keys()])].filter(rowKey).sort()) {
    const [table, id] = key.split(' ') as [string, string]
    const [was, is] = [before.get(key), after.get(key)]
    if (was === undefined && is !== undefined) effects.push(`insert ${schema}.${table} ${id} ${JSON.stringify([is.row.name, is.row.age, is.row.country])}`)
    else if (was !== undefined && is === undefined) effects.push(`delete ${schema}.${table} ${id}`)
    else if (was !== undefined && is !== undefined && was.xmin !== is.xmin) {
      const columns = ['name', 'age', 'country'].filter((column) => was.row[column] !== is.row[column])
      effects.push(`update ${schema}.${table} ${id} ${JSON.stringify(Object.fromEntries(columns.map((column) => [column, [was.row[column], is.row[column]]])))}`)
    }
  }
  return effects.sort()
}

function named (effects: RowEffect[]): string[] {
  return effects.flatMap((effect) => {
    switch (effect.action) {
      case 'insert': return [`insert ${effect.table} ${effect.id} ${JSON.stringify(['name', 'age', 'country'].map((column) => effect.columns[column]?.to))}`]
      case 'update': return [`update ${effect.table} ${effect.id} ${JSON.stringify(Object.fromEntries(Object.entries(effect.columns).map(([column, { from, to }]) => [column, [from, to]])))}`]
      case 'delete': return [`delete ${effect.table} ${effect.id}`]
      default: return []
    }
  }).sort()
}

/**
 * A hook call forecast on a read-only snapshot, then made for real: the forecast leaves every row and xmin as it
 * was, answers what the real call answers, and says what the real call then writes.
 */
async function forecastThenCall (t: TestContext, app: TestApp, body: Json, hook: 'sync' | 'finalize', mask: (answer: Json) => Json = (answer) => answer): Promise<{ answer: Json, effects: RowEffect[] }> {
  const policy = postgresWriterSettings.read(app.config.settings)
  const pool = app.pool as pg.Pool
  const before = await everyRow(app)
  const client = await pool.connect()
  let effects: RowEffect[]
  let forecast: Json
  try {
    const rows = new RowForecast(await readRowSnapshot(client, app.schema, [body.object]), policy)
    const standIns = new Map([[postgresWriter.name, forecastingWriter(rows)]])
    const outcome = await hookRunner({ now: kubernetesTime(NOW), config: app.config, standIns })(postgresWriter, hook, body)
    assert.equal(outcome.kind, 'answer', JSON.stringify(outcome))
    forecast = (outcome as { body: Json }).body
    effects = outcome.rows
  } finally {
    client.release()
  }
  assert.deepEqual(await everyRow(app), before, 'the forecast wrote')
  const real = await callHook(app, body, hook)
  assert.equal(real.statusCode, 200, JSON.stringify(real.json))
  assert.deepEqual(mask(forecast), mask(real.json), 'the forecast answers as the hook does')
  assert.deepEqual(named(effects), effectsBetween(app.schema, before, await everyRow(app)), 'the forecast says what the hook writes')
  t.diagnostic(`${hook}: ${effects.map((effect) => effect.action).join(', ') || 'nothing'}`)
  return { answer: real.json, effects }
}

/** The fixture's object with the status its last answer left, and `spec`. */
function next (name: 'sync-create' | 'finalize', status: Json | undefined, generation: number, spec: Json = {}, changes: Parameters<typeof request>[1] = {}): Json {
  const body = request(name, { ...changes, spec })
  body.object.metadata.generation = generation
  if (status === undefined) delete body.object.status
  else body.object.status = status
  return body
}

test('PostgresWriter\'s forecast says what its hooks write, and answers as they do, sync after sync', async (t) => {
  const app = await build(t, { controllers: [postgresWriter] })
  const actions = (effects: RowEffect[]): string[] => effects.map((effect) => effect.action)

  let { answer, effects } = await forecastThenCall(t, app, next('sync-create', undefined, 1), 'sync')
  assert.deepEqual(actions(effects), ['createHookTables', 'createTable', 'insert'])
  ;({ answer, effects } = await forecastThenCall(t, app, next('sync-create', answer.status, 1), 'sync'))
  assert.deepEqual(effects, [])
  ;({ answer, effects } = await forecastThenCall(t, app, next('sync-create', answer.status, 2, { age: 24 }), 'sync'))
  assert.deepEqual(effects, [{ action: 'update', table: `${app.schema}.students`, id: 'default/sample-student', columns: { age: { from: 23, to: 24 } } }])

  await admin(app, 'UPDATE students SET age = 99')
  ;({ answer, effects } = await forecastThenCall(t, app, next('sync-create', answer.status, 2, { age: 24 }), 'sync'))
  assert.deepEqual(actions(effects), ['update'])
  assert.equal(answer.status.lastDriftRepair.reason, 'RowChanged')

  ;({ answer, effects } = await forecastThenCall(t, app, next('sync-create', answer.status, 3, { age: 24, table: 'graduates' }), 'sync'))
  assert.deepEqual(actions(effects), ['createTable', 'insert', 'delete'])

  ;({ answer, effects } = await forecastThenCall(t, app, next('finalize', answer.status, 3, { age: 24, table: 'graduates' }), 'finalize'))
  assert.deepEqual(actions(effects), ['delete'])
  ;({ answer, effects } = await forecastThenCall(t, app, next('sync-create', answer.status, 3, { age: 24, table: 'graduates' }), 'sync'))
  assert.deepEqual(effects, [])
  assert.equal(answer.status.conditions[0].reason, 'RowDeleted')
})

test('an Orphan released by the selector keeps its row; its release token, new each time, is the one thing the forecast cannot know', async (t) => {
  const app = await build(t, { controllers: [postgresWriter] })
  const token = (answer: Json): Json => ({ ...answer, status: { ...answer.status, releaseToken: typeof answer.status.releaseToken } })
  const orphan = { deletionPolicy: 'Orphan' }
  const { answer } = await forecastThenCall(t, app, next('sync-create', undefined, 1, orphan), 'sync')
  const { effects } = await forecastThenCall(t, app, next('finalize', answer.status, 1, orphan, { notDeleting: true }), 'finalize', token)
  assert.deepEqual(effects, [])
})

test('the snapshot is read in one read-only transaction that is over when it returns, on a connection that cannot write', async (t) => {
  const app = await build(t, { controllers: [postgresWriter] })
  await callHook(app, next('sync-create', undefined, 1), 'sync')
  const pool = readOnlyPool({ ...app.config.database, connection: connectionFromUrl(testDatabaseUrl(), 'the test database') })
  t.after(async () => { await pool.end() })
  const client = await pool.connect()
  try {
    const snapshot = await readRowSnapshot(client, app.schema, [request('sync-create').object])
    assert.deepEqual([...snapshot.tables.keys()], ['students'])
    const [activity] = (await (app.pool as pg.Pool).query('SELECT state FROM pg_stat_activity WHERE pid = $1', [(client as unknown as { processID: number }).processID])).rows
    assert.equal(activity?.state, 'idle', 'no transaction stays open')
    const locker = new pg.Client({ connectionString: testDatabaseUrl() })
    await locker.connect()
    try {
      await locker.query(`BEGIN; LOCK TABLE "${app.schema}"."students", "${app.schema}"."postgres-writer-rows" IN ACCESS EXCLUSIVE MODE NOWAIT; ROLLBACK`)
    } finally {
      await locker.end()
    }
    await assert.rejects(client.query(`DELETE FROM "${app.schema}"."students"`), /read-only transaction/)
  } finally {
    client.release()
  }
})

test('the forecast runs the row store\'s own decisions: a refused table, a stale status, a row another object left behind', async (t) => {
  const app = await build(t, { controllers: [postgresWriter], env: { PG_AUTO_CREATE_TABLES: 'false' } })
  const actions = (effects: RowEffect[]): string[] => effects.map((effect) => effect.action)
  const { answer } = await forecastThenCall(t, app, next('sync-create', undefined, 1), 'sync')
  assert.match(answer.status.conditions[0].message, /hook's own tables are missing/)

  await admin(app, `CREATE TABLE "postgres-writer-tombstones" (object_uid text PRIMARY KEY, id text NOT NULL, finalized_at timestamptz NOT NULL DEFAULT now(), release_token text);
    CREATE TABLE "postgres-writer-rows" (id text NOT NULL, table_name text NOT NULL, uid text, PRIMARY KEY (id, table_name));
    CREATE TABLE students (${ROW_COLUMNS}); CREATE TABLE graduates (${ROW_COLUMNS}); CREATE VIEW alumni AS SELECT * FROM students`)
  const refused = await forecastThenCall(t, app, next('sync-create', undefined, 1, { table: 'alumni' }), 'sync')
  assert.equal(refused.answer.status.conditions[0].reason, 'TableNotOrdinary')
  assert.deepEqual(refused.effects, [])

  // Written to graduates, then answered with a status that still names students: the placement finds the row where
  // the hook recorded it, and moves it.
  const written = await forecastThenCall(t, app, next('sync-create', undefined, 1, { table: 'graduates' }), 'sync')
  assert.deepEqual(actions(written.effects), ['insert'])
  const moved = await forecastThenCall(t, app, next('sync-create', { table: 'students' }, 2, { table: 'students' }), 'sync')
  assert.deepEqual(actions(moved.effects), ['insert', 'delete'])
  assert.equal(moved.answer.status.conditions[0].reason, 'RowWritten')
})

test('the snapshot is read a page of PostgresWriters at a time: a table the forecast of an earlier page created is not created again', async (t) => {
  const app = await build(t, { controllers: [postgresWriter] })
  const policy = postgresWriterSettings.read(app.config.settings)
  const pool = readOnlyPool({ ...app.config.database, connection: connectionFromUrl(testDatabaseUrl(), 'the test database') })
  t.after(async () => { await pool.end() })
  const [first, second] = ['first', 'second'].map((name) => request('sync-create', { objectName: name, uid: `uid-${name}`, spec: { table: 'planned_only' } }))
  const client = await pool.connect()
  try {
    const rows = new RowForecast(await readRowSnapshot(client, app.schema, [first?.object]), policy)
    const run = hookRunner({ now: kubernetesTime(NOW), config: app.config, standIns: new Map([[postgresWriter.name, forecastingWriter(rows)]]) })
    const created = async (body: Json | undefined): Promise<string[]> => {
      const outcome = await run(postgresWriter, 'sync', body as Json)
      assert.equal(outcome.kind, 'answer', JSON.stringify(outcome))
      return outcome.rows.map((effect) => effect.action)
    }
    assert.ok((await created(first)).includes('createTable'), 'the first page creates it')
    rows.snapshot = await readRowSnapshot(client, app.schema, [second?.object], rows.snapshot)
    assert.deepEqual([...rows.snapshot.tables.keys()], ['planned_only'])
    assert.deepEqual(await created(second), ['insert'], 'the second page writes into the table the first created')
  } finally {
    client.release()
  }
})
