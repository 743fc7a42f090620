import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { outcomeOf, type Answer } from './hook-calls.js'
import { pollHookBackends, startRig, STATEMENT_TIMEOUT_SECONDS } from './hook-server.js'
import { rowsById } from '../helpers/postgres-writer-rows.js'
import { slowBody } from '../helpers/slow-body.js'
import { Writer } from './writers.js'

/**
 * Every call answers within its deadline (PG_HOOK_DEADLINE, default 6 s), below Metacontroller's 10 s timeout,
 * whatever its statements take; what still runs then is cancelled in PostgreSQL too, and rolled back.
 */

const TABLES = ['students', 'graduates', 'alumni', 'staff', 'faculty', 'visitors']
const DEFAULT_DEADLINE_MS = 6000
const TRIGGER_SLEEP_SECONDS = STATEMENT_TIMEOUT_SECONDS - 0.5
/** What answering may add to the deadline on a loaded machine. */
const SLACK_MS = 1500
/**
 * How long each call first waits for its row's advisory lock: its statement then starts a second after the call, and
 * would reach the statement timeout (here above the deadline, so capped at it) a second after the deadline.
 */
const LOCK_WAIT_MS = 1000

test(`six tables whose triggers each sleep ${TRIGGER_SLEEP_SECONDS} s: sync and finalize answer by the deadline, cancelled in PostgreSQL, rolled back`, async (t) => {
  // A placement or finalize is one statement over all six tables (9 s of triggers): the deadline, not the statement
  // timeout, is what ends it here.
  const { postgres, schema, server } = await startRig(t, { PG_STATEMENT_TIMEOUT: '30' })
  const admin = await postgres.connect()
  const observer = await postgres.connect()

  for (const table of TABLES) assert.equal(outcomeOf(await new Writer(`in-${table}`, { table, name: table, age: 1, country: 'x' }).call(server)), 'Ready')
  // Rows in every table, as an earlier version that recorded no placements could leave them, adopted with no owner.
  // Placing the first writer's row in students touches all six tables (an insert and five deletes, 1.5 s each: 9 s);
  // finalizing the second one deletes from all six (9 s). Each call is its row's lock, then one statement.
  const placed = new Writer('placed', { table: 'students', name: 'ada', age: 36, country: 'england' })
  const finalized = new Writer('finalized', { table: 'students', name: 'alan', age: 41, country: 'england' })
  finalized.delete()
  const adopt = async (id: string, table: string): Promise<void> => {
    await admin.query(`INSERT INTO "${schema}"."${table}" VALUES ($1, 'stray', 1, 'x')`, [id])
    await admin.query(`INSERT INTO "${schema}"."postgres-writer-rows" (id, table_name) VALUES ($1, $2)`, [id, table])
  }
  for (const table of TABLES) {
    if (table !== 'students') await adopt(placed.id, table)
    await adopt(finalized.id, table)
  }
  await admin.query(`CREATE FUNCTION "${schema}".slow_row() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN PERFORM pg_sleep(${TRIGGER_SLEEP_SECONDS}); RETURN COALESCE(NEW, OLD); END $$`)
  for (const table of TABLES) {
    await admin.query(`CREATE TRIGGER slow_row BEFORE INSERT OR UPDATE OR DELETE ON "${schema}"."${table}" FOR EACH ROW EXECUTE FUNCTION "${schema}".slow_row()`)
  }
  const before = JSON.stringify([...await rowsById(admin, schema)].sort())

  const slow: Answer[] = []
  const leftRunning: string[] = []
  for (const writer of [placed, finalized]) {
    await admin.query('BEGIN')
    await admin.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [writer.id])
    const call = writer.call(server)
    await sleep(LOCK_WAIT_MS)
    await admin.query('COMMIT')
    const answer = await call
    slow.push(answer)
    // Within half a second of the answer, no statement of the hook still runs.
    leftRunning.push(...await pollHookBackends(observer, "state = 'active'", (running) => running.length === 0, 500))
    t.diagnostic(`${answer.hook}: ${outcomeOf(answer)} in ${Math.round(answer.ms)} ms, resyncAfterSeconds ${answer.body?.resyncAfterSeconds}`)
  }
  for (const answer of slow) {
    assert.equal(outcomeOf(answer), answer.hook === 'sync' ? 'Ready=False DatabaseUnavailable' : 'finalized=false DatabaseUnavailable')
    assert.ok(answer.body.resyncAfterSeconds > 0)
    assert.match(answer.body.status.conditions[0].message, /PG_HOOK_DEADLINE/)
    assert.ok(answer.ms < DEFAULT_DEADLINE_MS + SLACK_MS, `${answer.hook} answered in ${Math.round(answer.ms)} ms, by the deadline`)
  }
  assert.deepEqual(leftRunning, [], 'no statement of the hook still runs in PostgreSQL after its answer')
  assert.equal(JSON.stringify([...await rowsById(admin, schema)].sort()), before, 'what ran was rolled back')

  for (const table of TABLES) await admin.query(`DROP TRIGGER slow_row ON "${schema}"."${table}"`)
  assert.deepEqual([outcomeOf(await placed.call(server)), outcomeOf(await finalized.call(server))], ['Ready', 'finalized'])
  const rows = await rowsById(admin, schema)
  assert.deepEqual([rows.get(placed.id)?.map((r) => r.table), rows.get(finalized.id)], [['students'], undefined])
  t.diagnostic(`longest sync ${Math.round(slow[0]?.ms ?? 0)} ms, longest finalize ${Math.round(slow[1]?.ms ?? 0)} ms (deadline ${DEFAULT_DEADLINE_MS} ms); statements left running after the answers: ${leftRunning.length}`)
})

test('the deadline counts from the call\'s arrival: a body that takes 2 s of a 3 s deadline leaves 1 s for PostgreSQL', async (t) => {
  const deadlineMs = 3000
  const bodyMs = 2000
  const { postgres, schema, server } = await startRig(t, { PG_HOOK_DEADLINE: String(deadlineMs / 1000), PG_STATEMENT_TIMEOUT: '30' })
  const admin = await postgres.connect()
  const writer = new Writer('slow-body', { table: 'students', name: 'ada', age: 36, country: 'england' })
  assert.equal(outcomeOf(await writer.call(server)), 'Ready')
  writer.edit({ ...writer.spec, age: 37 })
  const content = Buffer.from(JSON.stringify(writer.request()))

  // The row is locked throughout: the sync waits in PostgreSQL until its deadline.
  await admin.query('BEGIN')
  await admin.query(`SELECT 1 FROM "${schema}".students WHERE id = $1 FOR UPDATE`, [writer.id])
  const answer = await slowBody({ port: server.port, path: '/postgres-writer/sync', length: content.length, content, burst: content.length - 1, intervalMs: bodyMs }).answered
  await admin.query('COMMIT')

  const body = JSON.parse(answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4))
  const ready = body.status.conditions[0]
  t.diagnostic(`answered ${answer.status} ${ready.reason} ${Math.round(answer.ms)} ms after the headers, the body's last byte ${bodyMs} ms after them`)
  assert.equal(answer.status, 200)
  assert.equal(ready.reason, 'DatabaseUnavailable')
  assert.match(ready.message, /PG_HOOK_DEADLINE \(3 s\) of its arrival/)
  assert.ok(answer.ms < deadlineMs + SLACK_MS, `answered ${Math.round(answer.ms)} ms after it arrived: by its deadline, not ${deadlineMs} ms after its body`)
  assert.deepEqual((await rowsById(admin, schema)).get(writer.id)?.map((row) => row.age), [36], 'the row is as it was')
})
