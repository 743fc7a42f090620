import assert from 'node:assert/strict'
import { test } from 'node:test'
import { longestMs, outcomeOf, tally, type Answer } from './hook-calls.js'
import { CALL_BOUND_MS, startRig, STATEMENT_TIMEOUT_SECONDS } from './hook-server.js'
import { assertRowsMatchWriters } from './rows.js'
import { replay, Writer } from './writers.js'

test('PostgreSQL slow (a held table lock, then a statement that sleeps): hooks answer DatabaseUnavailable in time, then recover', async (t) => {
  const { postgres, schema, server } = await startRig(t)
  const admin = await postgres.connect()

  const edited = new Writer('edited', { table: 'students', name: 'ada', age: 36, country: 'england' })
  const moved = new Writer('moved', { table: 'graduates', name: 'alan', age: 41, country: 'england' })
  const deleted = new Writer('deleted', { table: 'students', name: 'grace', age: 85, country: 'usa' })
  const created = new Writer('created', { table: 'students', name: 'edsger', age: 72, country: 'netherlands' })
  for (const writer of [edited, moved, deleted]) assert.equal(outcomeOf(await writer.call(server)), 'Ready')

  const writers = [edited, moved, deleted, created]

  /**
   * Every writer's next call at once, each touching the slow table: an edit, a move into it, a delete, and the
   * fourth writer's call (its creation the first time, its delete the second). All answer in time, refused.
   */
  const callsWhileSlow = async (): Promise<Answer[]> => {
    edited.edit({ ...edited.spec, age: edited.spec.age + 1 })
    moved.edit({ ...moved.spec, table: 'students' })
    deleted.delete()
    const answers = await Promise.all(writers.map(async (writer) => await writer.call(server)))
    assert.deepEqual(answers.map(outcomeOf), answers.map((a) => a.hook === 'sync' ? 'Ready=False DatabaseUnavailable' : 'finalized=false DatabaseUnavailable'))
    for (const answer of answers) {
      assert.ok(answer.ms < CALL_BOUND_MS, `answered in ${Math.round(answer.ms)} ms, within ${CALL_BOUND_MS} ms`)
      assert.ok(answer.body.resyncAfterSeconds > 0, 'a bounded retry is asked for')
    }
    return answers
  }
  /** The same calls again once the database is fast: all succeed. */
  const callsAfterRecovery = async (): Promise<Answer[]> => {
    const answers = await replay(server, writers, 1)
    assert.deepEqual(answers.map(outcomeOf), answers.map((a) => a.hook === 'sync' ? 'Ready' : 'finalized'))
    assert.equal(answers.length, writers.length)
    return answers
  }

  // A lock held longer than the statement (and lock) timeout.
  await admin.query(`BEGIN; LOCK TABLE "${schema}".students IN ACCESS EXCLUSIVE MODE`)
  const locked = await callsWhileSlow()
  await admin.query('COMMIT')
  const unlocked = await callsAfterRecovery()
  const lockedRows = await assertRowsMatchWriters(admin, schema, writers)

  // A statement that sleeps far past the statement timeout: a trigger on every row written or deleted.
  deleted.edit({ ...deleted.spec }) // created anew, to be deleted again
  moved.edit({ ...moved.spec, table: 'graduates' })
  created.edit({ ...created.spec, age: created.spec.age + 1 })
  assert.deepEqual((await replay(server, [deleted, moved, created], 1)).map(outcomeOf), ['Ready', 'Ready', 'Ready'])
  await admin.query(`
    CREATE FUNCTION "${schema}".sleep_on_write() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN PERFORM pg_sleep(${STATEMENT_TIMEOUT_SECONDS * 10}); RETURN COALESCE(NEW, OLD); END $$;
    CREATE TRIGGER sleep_on_write BEFORE INSERT OR UPDATE OR DELETE ON "${schema}".students
      FOR EACH ROW EXECUTE FUNCTION "${schema}".sleep_on_write()`)
  created.delete()
  const sleeping = await callsWhileSlow()
  await admin.query(`DROP TRIGGER sleep_on_write ON "${schema}".students`)
  const awake = await callsAfterRecovery()
  const sleepingRows = await assertRowsMatchWriters(admin, schema, writers)

  const slow = [...locked, ...sleeping]
  t.diagnostic(`table locked: ${JSON.stringify(tally(locked))}; then ${JSON.stringify(tally(unlocked))}; rows checked ${lockedRows}`)
  t.diagnostic(`sleeping trigger: ${JSON.stringify(tally(sleeping))}; then ${JSON.stringify(tally(awake))}; rows checked ${sleepingRows}`)
  t.diagnostic(`longest slow call ${longestMs(slow)} ms (statement timeout ${STATEMENT_TIMEOUT_SECONDS * 1000} ms, bound ${CALL_BOUND_MS} ms)`)
})
