import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { build } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { admin, callHook, ID, messageOf, readyOf, request, ROW_COLUMNS, rows } from './calls.js'

/** Ready=True only over a real row in an ordinary table: what each kind of relation and each table shape gets. */

const relationKinds: Array<{ kind: string, ddl: string, message: RegExp, holder?: { schema?: string, table: string } }> = [
  {
    kind: 'a view over a table in another schema',
    ddl: `CREATE SCHEMA IF NOT EXISTS elsewhere; CREATE TABLE IF NOT EXISTS elsewhere.base (${ROW_COLUMNS}); CREATE VIEW students AS SELECT * FROM elsewhere.base`,
    message: /\.students is a view, not an ordinary table/,
    holder: { schema: 'elsewhere', table: 'base' }
  },
  {
    kind: 'a materialized view',
    ddl: `CREATE TABLE base (${ROW_COLUMNS}); CREATE MATERIALIZED VIEW students AS SELECT * FROM base`,
    message: /\.students is a materialized view, not an ordinary table/,
    holder: { table: 'base' }
  },
  {
    kind: 'a partitioned table',
    ddl: `CREATE TABLE students (${ROW_COLUMNS}) PARTITION BY HASH (id); CREATE TABLE students_all PARTITION OF students FOR VALUES WITH (MODULUS 1, REMAINDER 0)`,
    message: /\.students is a partitioned table, not an ordinary table/,
    holder: { table: 'students_all' }
  },
  {
    kind: 'a partition',
    ddl: `CREATE TABLE everyone (${ROW_COLUMNS}) PARTITION BY HASH (id); CREATE TABLE students PARTITION OF everyone FOR VALUES WITH (MODULUS 1, REMAINDER 0)`,
    message: /\.students is a partition of .*everyone, not an ordinary table/,
    holder: { table: 'students' }
  },
  {
    kind: 'an inheritance child',
    ddl: `CREATE TABLE people (${ROW_COLUMNS}); CREATE TABLE students (PRIMARY KEY (id)) INHERITS (people)`,
    message: /\.students is an inheritance child of .*people, not an ordinary table/,
    holder: { table: 'students' }
  }
]

for (const { kind, ddl, message, holder } of relationKinds) {
  test(`spec.table naming ${kind} gives Ready=False TableNotOrdinary and writes nothing`, async (t) => {
    const app = await build(t)
    t.after(async () => { await admin(app, 'DROP SCHEMA IF EXISTS elsewhere CASCADE') })
    await admin(app, ddl)
    const answer = await callHook(app, request('sync-create'))
    assert.equal(answer.statusCode, 200)
    assert.equal(readyOf(answer), 'False TableNotOrdinary', messageOf(answer))
    assert.match(messageOf(answer), message)
    assert.match(messageOf(answer), /nothing was written/)
    assert.equal(answer.json.status.table, undefined, 'no table holds the row')
    assert.equal(answer.json.resyncAfterSeconds, 60)
    if (holder !== undefined) assert.deepEqual(await rows(app, holder.table, holder.schema), [], 'no row anywhere')
  })
}

test('spec.table naming a foreign table gives Ready=False TableNotOrdinary', async (t) => {
  const app = await build(t)
  const wrapper = `fdw_${app.schema}`
  t.after(async () => { await admin(app, `DROP FOREIGN DATA WRAPPER IF EXISTS ${wrapper} CASCADE`) })
  await admin(app, `CREATE FOREIGN DATA WRAPPER ${wrapper}; CREATE SERVER ${wrapper}_server FOREIGN DATA WRAPPER ${wrapper};
    CREATE FOREIGN TABLE students (id text, name text, age integer, country text) SERVER ${wrapper}_server`)
  const answer = await callHook(app, request('sync-create'))
  assert.equal(readyOf(answer), 'False TableNotOrdinary')
  assert.match(messageOf(answer), /\.students is a foreign table, not an ordinary table/)
})

test('a table of another kind that replaces the row\'s table between two syncs is found at the next sync', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  await admin(app, `CREATE TABLE base (${ROW_COLUMNS}); ALTER TABLE students RENAME TO old_students; CREATE VIEW students AS SELECT * FROM base`)
  const answer = await callHook(app, request('sync-age-changed'))
  assert.equal(readyOf(answer), 'False TableNotOrdinary', messageOf(answer))
  assert.deepEqual(await rows(app, 'base'), [], 'nothing was written through the view')
})

test('a sync or finalize never reaches into partitions, inheritance children or views: those rows are not PostgresWriter rows', async (t) => {
  const app = await build(t)
  await admin(app, `
    CREATE TABLE archive (${ROW_COLUMNS}) PARTITION BY HASH (id);
    CREATE TABLE archive_all PARTITION OF archive FOR VALUES WITH (MODULUS 1, REMAINDER 0);
    CREATE TABLE people (${ROW_COLUMNS});
    CREATE TABLE staff (PRIMARY KEY (id)) INHERITS (people);
    INSERT INTO archive VALUES ('${ID}', 'archived', 1, 'x');
    INSERT INTO staff VALUES ('${ID}', 'staff', 2, 'y')`)
  // The row is written into people, an ordinary table (an inheritance parent), then moved out of it: the delete
  // reaches people alone, never its child staff; nothing reaches the partitioned archive.
  assert.equal(readyOf(await callHook(app, request('sync-create', { spec: { table: 'people' } }))), 'True RowWritten')
  assert.deepEqual((await (app.pool as any).query(`SELECT name FROM ONLY "${app.schema}".people`)).rows, [{ name: 'alex' }])
  assert.equal(readyOf(await callHook(app, request('sync-create', { statusTable: 'people' }))), 'True RowWritten')
  assert.deepEqual((await (app.pool as any).query(`SELECT name FROM ONLY "${app.schema}".people`)).rows, [])
  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  assert.deepEqual(await rows(app, 'students'), [])
  assert.deepEqual((await rows(app, 'archive_all')).map((r) => r.name), ['archived'])
  assert.deepEqual((await rows(app, 'staff')).map((r) => r.name), ['staff'])
})

test('an inheritance parent is an ordinary table: the row is written into it alone', async (t) => {
  const app = await build(t)
  await admin(app, `CREATE TABLE students (${ROW_COLUMNS}); CREATE TABLE transfer (PRIMARY KEY (id)) INHERITS (students);
    INSERT INTO transfer VALUES ('${ID}', 'in the child', 9, 'x')`)
  const answer = await callHook(app, request('sync-create'))
  assert.equal(readyOf(answer), 'True RowWritten', messageOf(answer))
  assert.deepEqual((await (app.pool as any).query(`SELECT name FROM ONLY "${app.schema}".students`)).rows, [{ name: 'alex' }])
  assert.deepEqual((await rows(app, 'transfer')).map((r) => r.name), ['in the child'])
  assert.equal(readyOf(await callHook(app, request('sync-resync'))), 'True RowWritten')
})

const shapes: Array<{ shape: string, ddl: string, message: RegExp }> = [
  { shape: 'age is text', ddl: 'id text PRIMARY KEY, name text, age text, country text', message: /column age is text, but it must be integer or bigint/ },
  { shape: 'age is smallint', ddl: 'id text PRIMARY KEY, name text, age smallint, country text', message: /column age is smallint, but it must be integer or bigint/ },
  { shape: 'id is an integer', ddl: 'id integer PRIMARY KEY, name text, age integer, country text', message: /column id is integer, but it must be text or character varying/ },
  { shape: 'country is missing', ddl: 'id text PRIMARY KEY, name text, age integer', message: /has no column country/ },
  { shape: 'id has no unique key', ddl: 'id text, name text, age integer, country text', message: /column id has no primary key or unique constraint: add one/ },
  { shape: 'id is unique only together with name', ddl: 'id text, name text, age integer, country text, UNIQUE (id, name)', message: /column id has no primary key or unique constraint/ },
  { shape: 'another column is NOT NULL without a default', ddl: `${ROW_COLUMNS}, email text NOT NULL`, message: /column email is NOT NULL and has no default/ },
  { shape: 'age is generated', ddl: 'id text PRIMARY KEY, name text, age integer GENERATED ALWAYS AS (length(name)) STORED, country text', message: /column age is generated/ }
]

for (const { shape, ddl, message } of shapes) {
  test(`a table whose ${shape} is reported at the first sync, TableIncompatible, and nothing is written`, async (t) => {
    const app = await build(t)
    await admin(app, `CREATE TABLE students (${ddl})`)
    const answer = await callHook(app, request('sync-create'))
    assert.equal(readyOf(answer), 'False TableIncompatible', messageOf(answer))
    assert.match(messageOf(answer), message)
    assert.match(messageOf(answer), /nothing was written/)
    const count = await (app.pool as any).query(`SELECT count(*)::int AS n FROM "${app.schema}".students`)
    assert.equal(count.rows[0].n, 0)
  })
}

test('a bigint age and character varying text columns are compatible', async (t) => {
  const app = await build(t)
  await admin(app, 'CREATE TABLE students (id varchar(317) PRIMARY KEY, name varchar, age bigint NOT NULL, country varchar(100), note text)')
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  assert.equal(readyOf(await callHook(app, request('sync-age-changed'))), 'True RowWritten')
  assert.deepEqual(await rows(app, 'students'), [{ id: ID, name: 'alex', age: '24', country: 'canada' }])
})

for (const [what, body] of [
  ['changes the row as it is written', 'NEW.name := upper(NEW.name); RETURN NEW;'],
  ['drops the row as it is written', 'RETURN NULL;']
] as const) {
  test(`a BEFORE trigger that ${what} gives Ready=False, never Ready=True`, async (t) => {
    const app = await build(t)
    await admin(app, `CREATE TABLE students (${ROW_COLUMNS});
      CREATE FUNCTION meddle() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} END $$;
      CREATE TRIGGER meddle BEFORE INSERT OR UPDATE ON students FOR EACH ROW EXECUTE FUNCTION meddle()`)
    for (const name of ['sync-create', 'sync-age-changed'] as const) {
      const answer = await callHook(app, request(name))
      assert.equal(readyOf(answer), 'False TableIncompatible', `${name}: ${messageOf(answer)}`)
      assert.match(messageOf(answer), /did not keep the row as written/)
    }
  })
}

test('a column changed after the table was found fit is reported exactly at the next sync', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  await admin(app, 'ALTER TABLE students ALTER COLUMN age TYPE text')
  for (const name of ['sync-age-changed', 'sync-create'] as const) {
    const answer = await callHook(app, request(name))
    assert.equal(readyOf(answer), 'False TableIncompatible', `${name}: ${messageOf(answer)}`)
    assert.match(messageOf(answer), /column age is text, but it must be integer or bigint/)
  }
})

test('copies of the row that the hook did not write stay, however they came there; a table it wrote, dropped since, is no error', async (t) => {
  const app = await build(t)
  const other = `${app.schema}_other`
  t.after(async () => { await admin(app, `DROP SCHEMA IF EXISTS "${other}" CASCADE`) })
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  await admin(app, `
    CREATE SCHEMA "${other}";
    CREATE TABLE from_query AS SELECT * FROM students;
    SELECT * INTO selected_into FROM students;
    CREATE TABLE "${other}".moved_in AS SELECT * FROM students; ALTER TABLE "${other}".moved_in SET SCHEMA "${app.schema}"`)
  const moved = await callHook(app, request('sync-table-moved'))
  assert.equal(readyOf(moved), 'True RowWritten', messageOf(moved))
  assert.deepEqual(await rows(app, 'students'), [], 'the row the hook wrote moved')
  for (const table of ['from_query', 'selected_into', 'moved_in']) {
    assert.deepEqual((await rows(app, table)).map((row) => row.name), ['alex'], `the copy in ${table} stays`)
  }

  // The hook wrote the row into graduates; that table is dropped: a placement and a finalize go on.
  await admin(app, 'DROP TABLE graduates')
  const placed = await callHook(app, request('sync-create', { statusTable: 'graduates' }))
  assert.equal(readyOf(placed), 'True RowWritten', messageOf(placed))
  await admin(app, 'DROP TABLE students')
  const finalized = await callHook(app, request('finalize'), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  for (const table of ['from_query', 'selected_into', 'moved_in']) assert.equal((await rows(app, table)).length, 1)
})

test('tables of the schema created and dropped without pause meanwhile: every move answers RowWritten, none TableMissing', async (t) => {
  const app = await build(t)
  const churner = new pg.Client({ connectionString: testDatabaseUrl() })
  await churner.connect()
  t.after(async () => { await churner.end() })
  await churner.query(`CREATE SCHEMA IF NOT EXISTS "${app.schema}"; SET search_path TO "${app.schema}"`)
  const churning = { on: true, created: 0 }
  const churn = (async () => {
    for (let i = 0; churning.on; i++) {
      await churner.query(`CREATE TABLE churn_${i} (${ROW_COLUMNS}); ${i >= 4 ? `DROP TABLE churn_${i - 4}` : ''}`)
      churning.created++
    }
  })()
  const outcomes = new Map<string, number>()
  await Promise.all(Array.from({ length: 8 }, async (_, writer) => {
    for (let move = 0; move < 25; move++) {
      const answer = await callHook(app, request('sync-create', { objectName: `mover-${writer}`, spec: { table: move % 2 === 0 ? 'students' : 'graduates' }, statusTable: move === 0 ? null : move % 2 === 0 ? 'graduates' : 'students' }))
      const outcome = `${readyOf(answer)}${readyOf(answer) === 'True RowWritten' ? '' : `: ${messageOf(answer)}`}`
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
    }
  }))
  churning.on = false
  await churn
  t.diagnostic(`${churning.created} tables created meanwhile; outcomes ${JSON.stringify([...outcomes])}`)
  assert.deepEqual([...outcomes.keys()], ['True RowWritten'])
})
