import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { DeadlineExceeded, withinDeadline } from '../../hooks/database/deadline.js'
import { testDatabaseUrl } from '../helpers/database-url.js'

const APPLICATION = 'deadline-test'

function pool (t: import('node:test').TestContext, max: number): pg.Pool {
  const created = new pg.Pool({ connectionString: testDatabaseUrl(), max, application_name: APPLICATION })
  t.after(async () => { await created.end() })
  return created
}

async function running (observer: pg.Pool): Promise<number> {
  const result = await observer.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'", [APPLICATION])
  return result.rows[0]?.n ?? 0
}

test('a statement still running at the deadline is cancelled in PostgreSQL, not only abandoned', async (t) => {
  const io = { pool: pool(t, 2), deadlineMs: 500 }
  const observer = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 })
  t.after(async () => { await observer.end() })
  // The connection is opened first: on a busy machine opening one took longer than the deadline, so the statement
  // never ran, and the connection, arriving late, went back to the pool as it should.
  await io.pool.query('SELECT 1')
  assert.equal(io.pool.idleCount, 1)
  const started = performance.now()
  await assert.rejects(withinDeadline(io, async (db) => await db.query('SELECT pg_sleep(30)')), (error: unknown) => {
    assert.ok(error instanceof DeadlineExceeded)
    assert.match(error.message, /PG_HOOK_DEADLINE \(0\.5 s\)/)
    return true
  })
  const answeredMs = performance.now() - started
  assert.ok(answeredMs < 1500, `answered after ${Math.round(answeredMs)} ms`)
  let still = await running(observer)
  for (let waited = 0; still > 0 && waited < 2000; waited += 50) {
    await sleep(50)
    still = await running(observer)
  }
  assert.equal(still, 0, 'the backend stopped running the statement')
  assert.equal(io.pool.totalCount, 0, 'its connection was discarded')
})

test('a wait for a free connection counts against the deadline, and a connection that comes late goes back', async (t) => {
  const io = { pool: pool(t, 1), deadlineMs: 300 }
  const held = await io.pool.connect()
  const started = performance.now()
  await assert.rejects(withinDeadline(io, async (db) => await db.query('SELECT 1')), DeadlineExceeded)
  assert.ok(performance.now() - started < 1000)
  held.release()
  for (let waited = 0; io.pool.idleCount < 1 && waited < 2000; waited += 20) await sleep(20)
  assert.equal(io.pool.idleCount, 1, 'the late connection was released')
  assert.deepEqual((await withinDeadline(io, async (db) => await db.query('SELECT 1 AS one'))).rows, [{ one: 1 }])
})

test('work that fails discards its connection; work that succeeds returns it', async (t) => {
  const io = { pool: pool(t, 1), deadlineMs: 5000 }
  await assert.rejects(withinDeadline(io, async (db) => await db.query('SELECT 1/0')), /division by zero/)
  assert.equal(io.pool.totalCount, 0)
  await withinDeadline(io, async (db) => await db.query('SELECT 1'))
  assert.equal(io.pool.idleCount, 1)
})

test('the deadline counts from the call\'s arrival: a call whose body took the deadline runs nothing, a later one gets what is left', async (t) => {
  const io = { pool: pool(t, 1), deadlineMs: 5000 }
  let ran = false
  await assert.rejects(withinDeadline(io, async () => { ran = true }, performance.now() - io.deadlineMs), DeadlineExceeded)
  assert.equal(ran, false, 'no work ran')
  assert.equal(io.pool.totalCount, 0, 'no connection was taken')
  const started = performance.now()
  await assert.rejects(withinDeadline(io, async (db) => await db.query('SELECT pg_sleep(30)'), performance.now() - (io.deadlineMs - 300)), DeadlineExceeded)
  const answeredMs = performance.now() - started
  assert.ok(answeredMs < 2000, `cancelled after ${Math.round(answeredMs)} ms, of the 300 ms left; not the 5 s of a deadline counted from now`)
})
