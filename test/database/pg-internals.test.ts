import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { cancelRunningStatement, runBatch } from '../../hooks/database/pg-internals.js'
import { testDatabaseUrl } from '../helpers/database-url.js'

/**
 * The contract of hooks/database/pg-internals.ts, what it takes from pg beyond pg's documentation, on a real
 * PostgreSQL. `npm run test:newest-pg` runs this file against the newest pg 8.x too: it imports nothing but pg and that
 * module, so that it runs in a copy with only those installed.
 */

async function client (t: TestContext): Promise<pg.Client> {
  const connected = new pg.Client({ connectionString: testDatabaseUrl() })
  await connected.connect()
  t.after(async () => { await connected.end() })
  return connected
}

const admin = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 })
after(async () => { await admin.end() })

/** A table of the test's own, with one text column `v`, dropped afterwards. */
async function scratchTable (t: TestContext): Promise<string> {
  const table = `batch_${randomBytes(4).toString('hex')}`
  await admin.query(`CREATE TABLE ${table} (v text PRIMARY KEY)`)
  t.after(async () => { await admin.query(`DROP TABLE IF EXISTS ${table}`) })
  return table
}

/** How many messages of `kind` PostgreSQL sends `db` from now on, as pg's Connection emits them. */
function counted (db: pg.Client, kind: 'readyForQuery' | 'rowDescription'): () => number {
  const connection = (db as unknown as { connection: pg.Connection }).connection
  let count = 0
  connection.on(kind, () => { count++ })
  return () => count
}

/** A submittable that only keeps the Connection pg gives it, then answers nothing: for looking at the Connection. */
async function pgConnection (db: pg.Client): Promise<Record<string, unknown>> {
  return await new Promise((resolve) => {
    const probe = {
      submit: (connection: unknown) => {
        resolve(connection as Record<string, unknown>);
        (connection as { sync: () => void }).sync()
      },
      handleReadyForQuery: () => {},
      handleError: () => {}
    }
    void db.query(probe as unknown as pg.Submittable)
  })
}

test('pg still has what pg-internals.ts takes from it: the Connection a submittable gets, and the backend key', async (t) => {
  const db = await client(t)
  const connection = await pgConnection(db)
  for (const method of ['parse', 'bind', 'describe', 'execute', 'sync', 'sendCopyFail', 'on', 'off']) {
    assert.equal(typeof connection[method], 'function', `pg's Connection has no ${method}(): the batch writes its messages with it (hooks/database/pg-internals.ts)`)
  }
  const stream = connection.stream as Record<string, unknown> | undefined
  assert.equal(typeof stream?.cork, 'function', 'pg\'s Connection has no stream.cork(): the batch writes its messages in one go with it')
  assert.equal(typeof stream?.uncork, 'function', 'pg\'s Connection has no stream.uncork()')
  const key = db as unknown as Record<string, unknown>
  const { rows: [backend] } = await db.query('SELECT pg_backend_pid() AS pid')
  assert.equal(key.processID, backend.pid, 'a connected pg Client no longer holds its backend\'s process id in processID: the deadline\'s cancel sends it')
  assert.ok(Number.isInteger(key.secretKey), `a connected pg Client no longer holds the backend's secret key as a 32-bit integer in secretKey (it holds ${typeof key.secretKey}): the deadline's cancel sends it`)
  const url = new URL(testDatabaseUrl())
  assert.deepEqual([key.host, key.port], [url.hostname, Number(url.port)], 'a pg Client no longer holds the server it reached in host and port: the deadline\'s cancel connects there')
})

test('the statements run in order, each with its rows, and PostgreSQL answers them all with one ReadyForQuery', async (t) => {
  const db = await client(t)
  const table = await scratchTable(t)
  const answers = counted(db, 'readyForQuery')
  const results = await runBatch(db, [
    { text: `INSERT INTO ${table} (v) VALUES ($1), ($2)`, values: ['a', 'b'] },
    { text: `SELECT v, length(v) AS n, v = $1 AS first, ARRAY[v, $2] AS pair, NULL::text AS nothing FROM ${table} ORDER BY v`, values: ['a', 'x "quoted", \\ and {braces}'] },
    { text: `DELETE FROM ${table} WHERE v = ANY ($1::text[])`, values: [['b', 'c']] }
  ])
  assert.equal(answers(), 1)
  assert.deepEqual(results.map((result) => result.rowCount), [2, 2, 1])
  assert.deepEqual(results[1]?.rows, [
    { v: 'a', n: 1, first: true, pair: ['a', 'x "quoted", \\ and {braces}'], nothing: null },
    { v: 'b', n: 1, first: false, pair: ['b', 'x "quoted", \\ and {braces}'], nothing: null }
  ])
  assert.deepEqual((await db.query(`SELECT v FROM ${table}`)).rows, [{ v: 'a' }])
})

test('outside BEGIN the batch is one transaction: a failing statement rolls back those before it and skips the rest', async (t) => {
  const db = await client(t)
  const table = await scratchTable(t)
  await assert.rejects(runBatch(db, [
    { text: `INSERT INTO ${table} (v) VALUES ($1)`, values: ['before'] },
    { text: 'SELECT 1 / $1::int', values: [0] },
    { text: `INSERT INTO ${table} (v) VALUES ($1)`, values: ['after'] }
  ]), (error: unknown) => error instanceof pg.DatabaseError && error.code === '22012')
  assert.deepEqual((await db.query(`SELECT v FROM ${table}`)).rows, [])
  assert.equal((await db.query('SELECT 1 AS one')).rows[0].one, 1, 'the connection is usable, with no transaction left open')
  const { rows: [own] } = await db.query('SELECT xact_start = query_start AS fresh FROM pg_stat_activity WHERE pid = pg_backend_pid()')
  assert.equal(own.fresh, true, 'no transaction was left open: the next statement began one of its own')
})

test('a statement after pg_advisory_xact_lock sees what was committed while it waited, and the lock ends with the batch', async (t) => {
  const [db, holder, observer] = [await client(t), await client(t), await client(t)]
  const table = await scratchTable(t)
  const key = randomBytes(8).toString('hex')
  await holder.query('BEGIN')
  await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key])
  await holder.query(`INSERT INTO ${table} (v) VALUES ('committed while the batch waited')`)

  const batch = runBatch(db, [
    { text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', values: [key] },
    { text: `SELECT v FROM ${table}` }
  ])
  const pid = (db as unknown as { processID: number }).processID
  let waiting = false
  for (let waited = 0; !waiting && waited < 5000; waited += 20) {
    waiting = (await observer.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'advisory'", [pid])).rows.length > 0
    if (!waiting) await sleep(20)
  }
  assert.ok(waiting, 'the batch waited for the lock')
  await holder.query('COMMIT')
  const [, read] = await batch
  assert.deepEqual(read?.rows, [{ v: 'committed while the batch waited' }], 'the read took its snapshot after the lock')

  const free = await holder.query('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS free', [key])
  assert.equal(free.rows[0].free, true, 'the lock was released at the end of the batch')
})

test('a named statement is parsed once per connection: each ParseComplete marks one Parse as done', async (t) => {
  const db = await client(t)
  const name = `batch_test_${randomBytes(4).toString('hex')}`
  const text = 'SELECT $1::int + 1 AS next'
  const prepared = async (): Promise<number> => (await db.query('SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = $1', [name])).rows[0].n
  for (let i = 0; i < 3; i++) {
    const [result] = await runBatch(db, [{ text, values: [i], name }, { text, values: [i + 10], name }])
    assert.deepEqual(result?.rows, [{ next: i + 1 }])
  }
  assert.equal(await prepared(), 1)

  // A statement whose Parse fails is not taken for parsed: the next batch parses it again.
  const broken = `${name}_broken`
  const missing = `missing_${randomBytes(4).toString('hex')}`
  await assert.rejects(runBatch(db, [{ text: `SELECT v FROM ${missing}`, name: broken }]), /does not exist/)
  await db.query(`CREATE TEMP TABLE ${missing} (v text)`)
  assert.deepEqual((await runBatch(db, [{ text: `SELECT v FROM ${missing}`, name: broken }]))[0]?.rows, [])
})

test('a named statement is described once per connection: its later answers are read with the fields it had', async (t) => {
  const db = await client(t)
  const table = await scratchTable(t)
  const descriptions = counted(db, 'rowDescription')
  const name = `batch_test_${randomBytes(4).toString('hex')}`
  const read = { text: 'SELECT $1::int + 1 AS next, $1::int > 1 AS big, ARRAY[$1::text] AS texts', name }
  const insert = { text: `INSERT INTO ${table} (v) VALUES ($1)`, name: `${name}_insert` }
  for (let i = 0; i < 3; i++) {
    const results = await runBatch(db, [{ ...insert, values: [`v${i}`] }, { ...read, values: [i] }])
    assert.deepEqual(results, [{ rows: [], rowCount: 1 }, { rows: [{ next: i + 1, big: i > 1, texts: [String(i)] }], rowCount: 1 }])
  }
  assert.equal(descriptions(), 1, 'only the first answer described the rows; an INSERT without RETURNING has none to describe')
})

test('a named statement after an unnamed one that fails is not taken for parsed: the next batch parses it', async (t) => {
  const db = await client(t)
  const name = `batch_test_${randomBytes(4).toString('hex')}`
  const text = 'SELECT $1::int * 2 AS twice'
  // PostgreSQL answers the unnamed statement's Parse, then skips the rest of the batch, the named Parse included.
  await assert.rejects(runBatch(db, [{ text: 'SELECT 1 / $1::int', values: [0] }, { text, values: [1], name }]),
    (error: unknown) => error instanceof pg.DatabaseError && error.code === '22012')
  assert.deepEqual((await runBatch(db, [{ text, values: [21], name }]))[0]?.rows, [{ twice: 42 }])
})

test('an empty statement has an empty result, and COPY FROM STDIN is refused with the batch\'s own message', async (t) => {
  const db = await client(t)
  const table = await scratchTable(t)
  assert.deepEqual(await runBatch(db, [{ text: '' }, { text: 'SELECT 1 AS one' }]), [{ rows: [], rowCount: 0 }, { rows: [{ one: 1 }], rowCount: 1 }])
  await assert.rejects(runBatch(db, [{ text: `COPY ${table} FROM STDIN` }]), /no COPY data in a batch/)
  assert.equal((await db.query('SELECT 1 AS one')).rows[0].one, 1, 'the connection is usable')
})

test('cancelRunningStatement cancels the statement the backend runs, from a connection of its own', async (t) => {
  const db = await client(t)
  const started = performance.now()
  const sleeping = db.query('SELECT pg_sleep(30)')
  await sleep(200)
  const cancelled = assert.rejects(sleeping, (error: unknown) => error instanceof pg.DatabaseError && error.code === '57014')
  await cancelRunningStatement(db)
  await cancelled
  assert.ok(performance.now() - started < 10_000, `cancelled after ${Math.round(performance.now() - started)} ms`)
  assert.equal((await db.query('SELECT 1 AS one')).rows[0].one, 1, 'the connection is usable')
})
