import assert from 'node:assert/strict'
import { test } from 'node:test'
import type pg from 'pg'
import { build, type TestApp } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { invalidSpecReady } from '../helpers/invalid-spec.js'

async function sync (t: TestApp, body: unknown, hook = 'sync'): Promise<{ statusCode: number, json: any }> {
  const response = await t.app.inject({ method: 'POST', url: `/postgres-writer/${hook}`, payload: body as object })
  return { statusCode: response.statusCode, json: response.json() }
}

async function rows (t: TestApp, table: string): Promise<Array<{ id: string, name: string, age: number, country: string, xmin: string }>> {
  const pool = t.pool as pg.Pool
  const result = await pool.query(`SELECT id, name, age, country, xmin::text FROM "${t.schema}"."${table}" ORDER BY id`)
  return result.rows
}

test('first sync creates the table and the row, and answers Ready=True', async (t) => {
  const app = await build(t)
  const { statusCode, json } = await sync(app, fixture('postgres-writer', 'sync-create'))
  assert.equal(statusCode, 200)
  assert.deepEqual(json, {
    status: {
      table: 'students',
      id: 'default/sample-student',
      observedGeneration: 1,
      conditions: [{
        type: 'Ready',
        status: 'True',
        reason: 'RowWritten',
        message: `row "default/sample-student" in ${app.schema}.students matches the spec`,
        lastTransitionTime: '2026-11-22T12:00:00Z',
        observedGeneration: 1
      }]
    },
    attachments: []
  })
  assert.deepEqual((await rows(app, 'students')).map(({ xmin, ...row }) => row), [{ id: 'default/sample-student', name: 'alex', age: 23, country: 'canada' }])
  const columns = await (app.pool as pg.Pool).query(
    'SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = $1 AND table_name = \'students\' ORDER BY ordinal_position', [app.schema])
  assert.deepEqual(columns.rows, [
    { column_name: 'id', data_type: 'text', is_nullable: 'NO' },
    { column_name: 'name', data_type: 'text', is_nullable: 'NO' },
    { column_name: 'age', data_type: 'integer', is_nullable: 'NO' },
    { column_name: 'country', data_type: 'text', is_nullable: 'NO' }
  ])
})

test('an unchanged resync writes nothing and returns the observed status byte for byte', async (t) => {
  const app = await build(t)
  await sync(app, fixture('postgres-writer', 'sync-create'))
  const [before] = await rows(app, 'students')
  const request = fixture('postgres-writer', 'sync-resync')
  request.object.status.conditions[0].message = `row "default/sample-student" in ${app.schema}.students matches the spec`
  const first = await sync(app, request)
  const second = await sync(app, request)
  const after = await rows(app, 'students')
  assert.equal(after.length, 1)
  assert.equal(after[0]?.xmin, before?.xmin, 'no new row version was written')
  assert.deepEqual(first.json.status, request.object.status, 'status equals what was observed, lastTransitionTime included')
  assert.equal(JSON.stringify(second.json), JSON.stringify(first.json))
})

test('a changed spec updates the row; a changed table moves it in one transaction', async (t) => {
  const app = await build(t)
  await sync(app, fixture('postgres-writer', 'sync-create'))
  const [before] = await rows(app, 'students')
  const aged = await sync(app, fixture('postgres-writer', 'sync-age-changed'))
  assert.equal(aged.json.status.conditions[0].status, 'True')
  const [updated] = await rows(app, 'students')
  assert.equal(updated?.age, 24)
  assert.notEqual(updated?.xmin, before?.xmin)

  const moved = await sync(app, fixture('postgres-writer', 'sync-table-moved'))
  assert.equal(moved.json.status.table, 'graduates')
  assert.equal(moved.json.status.conditions[0].status, 'True')
  assert.deepEqual(await rows(app, 'students'), [])
  assert.deepEqual((await rows(app, 'graduates')).map(({ xmin, ...row }) => row), [{ id: 'default/sample-student', name: 'alex', age: 24, country: 'canada' }])
})

test('an incompatible existing table gives Ready=False with a reason, and no crash', async (t) => {
  const app = await build(t)
  await (app.pool as pg.Pool).query(`CREATE SCHEMA "${app.schema}"; CREATE TABLE "${app.schema}".students (id integer PRIMARY KEY, note text)`)
  const { statusCode, json } = await sync(app, fixture('postgres-writer', 'sync-create'))
  assert.equal(statusCode, 200)
  assert.equal(json.status.conditions[0].status, 'False')
  assert.equal(json.status.conditions[0].reason, 'TableIncompatible')
  assert.match(json.status.conditions[0].message, /id text primary key, name text, age integer, country text/)
  assert.equal(json.status.table, undefined, 'no table holds the row')
  assert.equal(json.resyncAfterSeconds, 60)
})

test('a missing table with PG_AUTO_CREATE_TABLES=false is reported, not created', async (t) => {
  const app = await build(t, { env: { PG_AUTO_CREATE_TABLES: 'false' } })
  const { json } = await sync(app, fixture('postgres-writer', 'sync-create'))
  assert.equal(json.status.conditions[0].reason, 'TableMissing')
  assert.equal(json.resyncAfterSeconds, 60)
  const exists = await (app.pool as pg.Pool).query('SELECT to_regclass($1) AS t', [`"${app.schema}".students`])
  assert.equal(exists.rows[0].t, null)
})

test('finalize deletes the row and answers finalized: true; a missing row or table counts as deleted', async (t) => {
  const app = await build(t)
  await sync(app, fixture('postgres-writer', 'sync-create'))
  const first = await sync(app, fixture('postgres-writer', 'finalize'), 'finalize')
  assert.equal(first.statusCode, 200)
  assert.equal(first.json.finalized, true)
  assert.equal(first.json.status.conditions[0].reason, 'RowDeleted')
  assert.deepEqual(await rows(app, 'students'), [])
  const again = await sync(app, fixture('postgres-writer', 'finalize'), 'finalize')
  assert.equal(again.json.finalized, true)
  await (app.pool as pg.Pool).query(`DROP TABLE "${app.schema}".students`)
  const tableGone = await sync(app, fixture('postgres-writer', 'finalize'), 'finalize')
  assert.equal(tableGone.json.finalized, true)
})

test('finalize deletes the row from the spec\'s table too, where a move whose answer was lost put it', async (t) => {
  const app = await build(t)
  await sync(app, fixture('postgres-writer', 'sync-create'))
  // The move to graduates committed, but its answer never reached Metacontroller: the status still says students.
  await sync(app, fixture('postgres-writer', 'sync-table-moved'))
  const request = fixture('postgres-writer', 'finalize')
  request.object.spec.table = 'graduates'
  const { json } = await sync(app, request, 'finalize')
  assert.equal(json.finalized, true)
  assert.deepEqual(await rows(app, 'students'), [])
  assert.deepEqual(await rows(app, 'graduates'), [])
})

for (const table of ['students; drop table x', '"x"', 'Students', 'a'.repeat(64), '']) {
  test(`table name ${JSON.stringify(table.slice(0, 30))} gives Ready=False without running any SQL`, async (t) => {
    // An unreachable database: any SQL attempt would surface as DatabaseUnavailable instead.
    const app = await build(t, { databaseUrl: 'postgres://nobody:secret@127.0.0.1:1/none', env: { PG_CONNECT_TIMEOUT: '1' } })
    const request = fixture('postgres-writer', 'sync-create')
    request.object.spec.table = table
    const { statusCode, json } = await sync(app, request)
    assert.equal(statusCode, 200)
    assert.equal(json.status.conditions[0].status, 'False')
    assert.equal(json.status.conditions[0].reason, 'InvalidTableName')
  })
}

test('PG_TABLE_ALLOWLIST refuses other tables without SQL and admits listed ones', async (t) => {
  const refused = await build(t, { databaseUrl: 'postgres://nobody:secret@127.0.0.1:1/none', env: { PG_TABLE_ALLOWLIST: 'graduates, alumni', PG_CONNECT_TIMEOUT: '1' } })
  const { json } = await sync(refused, fixture('postgres-writer', 'sync-create'))
  assert.equal(json.status.conditions[0].reason, 'TableNotAllowed')
  assert.match(json.status.conditions[0].message, /graduates, alumni/)
  assert.equal(json.resyncAfterSeconds, undefined, 'no early call: the spec or the configuration must change first')

  const allowed = await build(t, { env: { PG_TABLE_ALLOWLIST: 'students' } })
  const ok = await sync(allowed, fixture('postgres-writer', 'sync-create'))
  assert.equal(ok.json.status.conditions[0].status, 'True')
})

test('a NUL character in a value gives Ready=False InvalidSpec, and SQL fragments are stored as plain text', async (t) => {
  const app = await build(t)
  const request = fixture('postgres-writer', 'sync-create')
  request.object.spec.name = 'al\u0000ex'
  const nul = await sync(app, request)
  assert.equal(nul.statusCode, 200)
  assert.equal(nul.json.status.conditions[0].reason, 'InvalidSpec')

  const hostile = "Robert'); DROP TABLE students;-- \"quoted\" \\ ünïcødé 🐘"
  // eslint-disable-next-line no-template-curly-in-string -- hostile input: a literal ${x} must be stored as it is
  const placeholders = '$1 %s ${x}'
  request.object.spec.name = hostile
  request.object.spec.country = placeholders
  const stored = await sync(app, request)
  assert.equal(stored.json.status.conditions[0].status, 'True')
  const [row] = await rows(app, 'students')
  assert.equal(row?.name, hostile)
  assert.equal(row?.country, placeholders)
})

test('a spec the hook cannot interpret gets Ready=False InvalidSpec naming the fields', async (t) => {
  const app = await build(t)
  const request = fixture('postgres-writer', 'sync-create')
  request.object.spec.age = 'twenty'
  delete request.object.spec.country
  const { statusCode, json } = await sync(app, request)
  assert.match(invalidSpecReady(statusCode, json).message, /spec\.country: .*spec\.age: /)
})

test('a move whose answer was lost leaves no stray copy: the next placement and the finalize clean every table the hook wrote', async (t) => {
  const app = await build(t)
  await sync(app, fixture('postgres-writer', 'sync-create'))
  // The move to graduates committed, but its answer never reached Metacontroller: the status still says students.
  const lost = fixture('postgres-writer', 'sync-table-moved')
  lost.object.status.conditions[0].message = `row "default/sample-student" in ${app.schema}.students matches the spec`
  await sync(app, lost)
  assert.equal((await rows(app, 'graduates')).length, 1)
  // Before the retry, the table changes again: the status still names students.
  const again = fixture('postgres-writer', 'sync-table-moved')
  again.object.spec.table = 'alumni'
  const { json } = await sync(app, again)
  assert.equal(json.status.table, 'alumni')
  assert.deepEqual([(await rows(app, 'students')).length, (await rows(app, 'graduates')).length, (await rows(app, 'alumni')).length], [0, 0, 1])

  // A row that got into a table by any other way is not the hook's: the finalize leaves it.
  await (app.pool as pg.Pool).query(`INSERT INTO "${app.schema}".graduates VALUES ('default/sample-student', 'alex', 23, 'canada')`)
  assert.equal((await sync(app, fixture('postgres-writer', 'finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual([(await rows(app, 'graduates')).length, (await rows(app, 'alumni')).length], [1, 0])
})

test('a resync whose row went missing writes it again', async (t) => {
  const app = await build(t)
  await sync(app, fixture('postgres-writer', 'sync-create'))
  await (app.pool as pg.Pool).query(`DELETE FROM "${app.schema}".students`)
  const { json } = await sync(app, fixture('postgres-writer', 'sync-resync'))
  assert.equal(json.status.conditions[0].status, 'True')
  assert.equal((await rows(app, 'students')).length, 1)
})

test('a row\'s key is unambiguous: names that would collide, and a missing namespace or uid, get 422 naming the field', async (t) => {
  const app = await build(t)
  const cases: Array<[string, (object: any) => void, RegExp]> = [
    ['namespace a, name b/c', (o) => { o.metadata.namespace = 'a'; o.metadata.name = 'b/c' }, /^object\.metadata\.name /],
    ['namespace a/b, name c', (o) => { o.metadata.namespace = 'a/b'; o.metadata.name = 'c' }, /^object\.metadata\.namespace /],
    ['no namespace', (o) => { delete o.metadata.namespace }, /^object\.metadata\.namespace is missing/],
    ['no uid', (o) => { delete o.metadata.uid }, /^object\.metadata\.uid is missing/]
  ]
  for (const [what, change, message] of cases) {
    for (const [hook, name] of [['sync', 'sync-create'], ['finalize', 'finalize']] as const) {
      const body = fixture('postgres-writer', name)
      change(body.object)
      const { statusCode, json } = await sync(app, body, hook)
      assert.equal(statusCode, 422, `${what} ${hook}`)
      assert.match(json.message, message, `${what} ${hook}`)
    }
  }
  const tables = await (app.pool as pg.Pool).query('SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1', [app.schema])
  assert.equal(tables.rowCount, 0, 'nothing was written')
})

test('a status.table that is not a table name never reaches SQL: sync and finalize go on as if the status named none', async (t) => {
  const app = await build(t)
  await sync(app, fixture('postgres-writer', 'sync-create'))
  const hostile = 'x"; DROP TABLE students; --'
  for (const [name, hook] of [['sync-table-moved', 'sync'], ['finalize', 'finalize']] as const) {
    const request = fixture('postgres-writer', name)
    request.object.status.table = hostile
    const { statusCode, json } = await sync(app, request, hook)
    assert.equal(statusCode, 200)
    if (hook === 'sync') assert.equal(json.status.conditions[0].reason, 'RowWritten', json.status.conditions[0].message)
    else assert.equal(json.finalized, true, json.status.conditions[0].message)
  }
  assert.deepEqual([(await rows(app, 'students')).length, (await rows(app, 'graduates')).length], [0, 0])
})
