import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import { callHook, outcomeOf, type Answer } from './hook-calls.js'
import { pollHookBackends, startRig } from './hook-server.js'
import { rowsById } from '../helpers/postgres-writer-rows.js'
import { Writer } from './writers.js'

/**
 * Finalize is never undone. Metacontroller sends a finalize while an earlier sync of the same object may still run
 * (it gives up on a call after its timeout, and calls again): that sync must not put the row back once the
 * finalize has committed, and must not answer Ready=True for a row that is gone.
 */

const RUNS = 5

/** Waits until a hook backend matches `condition`. */
async function waitForBackend (observer: pg.Client, what: string, condition: string): Promise<void> {
  assert.notDeepEqual(await pollHookBackends(observer, condition, (backends) => backends.length > 0, 5000), [], `no hook backend ever ${what}`)
}

test('a sync held by a table lock while finalize is sent: the row is gone once both answered', async (t) => {
  const { postgres, schema, server } = await startRig(t)
  const admin = await postgres.connect()
  const observer = await postgres.connect()
  assert.equal(outcomeOf(await new Writer('graduate', { table: 'graduates', name: 'g', age: 1, country: 'x' }).call(server)), 'Ready')

  const resurrected: string[] = []
  for (let run = 0; run < RUNS; run++) {
    const writer = new Writer(`held-${run}`, { table: 'students', name: 'held', age: 20, country: 'peru' })
    assert.equal(outcomeOf(await writer.call(server)), 'Ready')
    await admin.query(`BEGIN; LOCK TABLE "${schema}".graduates IN ACCESS EXCLUSIVE MODE`)
    // The sync moves the row to the locked table and waits there; the finalize is sent meanwhile.
    writer.edit({ ...writer.spec, table: 'graduates' })
    const sync = callHook(server, 'sync', writer.request())
    await waitForBackend(observer, 'waited on the lock', "wait_event_type = 'Lock'")
    writer.delete()
    const finalize = callHook(server, 'finalize', writer.request())
    await sleep(500)
    await admin.query('COMMIT')
    const [synced, finalized] = await Promise.all([sync, finalize])
    assert.equal(outcomeOf(finalized), 'finalized', JSON.stringify(finalized.body))
    assert.notEqual(synced.statusCode, undefined)
    if ((await rowsById(admin, schema)).has(writer.id)) resurrected.push(`run ${run}: sync ${outcomeOf(synced)}`)
  }
  t.diagnostic(`${RUNS} runs: the row came back in ${resurrected.length}`)
  assert.deepEqual(resurrected, [], 'the row never comes back after finalize')
})

test('a sync slowed by a statement trigger while finalize commits: the row stays gone and the sync does not answer Ready=True', async (t) => {
  const { postgres, schema, server } = await startRig(t)
  const admin = await postgres.connect()
  const seed = new Writer('seed', { table: 'students', name: 's', age: 1, country: 'x' })
  assert.equal(outcomeOf(await seed.call(server)), 'Ready')
  await admin.query(`
    CREATE FUNCTION "${schema}".slow_statement() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$;
    CREATE TRIGGER slow_statement BEFORE UPDATE ON "${schema}".students FOR EACH STATEMENT EXECUTE FUNCTION "${schema}".slow_statement()`)

  const falseReady: string[] = []
  const resurrected: string[] = []
  const syncs: Answer[] = []
  for (let run = 0; run < RUNS; run++) {
    const writer = new Writer(`slowed-${run}`, { table: 'students', name: 'slowed', age: 30, country: 'peru' })
    assert.equal(outcomeOf(await writer.call(server)), 'Ready')
    // An edit: the sync updates the row in place, and sleeps in the trigger before it touches it.
    writer.edit({ ...writer.spec, age: 31 })
    const sync = callHook(server, 'sync', writer.request())
    await waitForBackend(admin, 'slept in the trigger', "wait_event = 'PgSleep'")
    writer.delete()
    const finalized = await callHook(server, 'finalize', writer.request())
    assert.equal(outcomeOf(finalized), 'finalized', 'the finalize committed while the sync slept')
    const synced = await sync
    syncs.push(synced)
    if (outcomeOf(synced) === 'Ready') falseReady.push(`run ${run}`)
    if ((await rowsById(admin, schema)).has(writer.id)) resurrected.push(`run ${run}: sync ${outcomeOf(synced)}`)
  }
  t.diagnostic(`${RUNS} runs: the sync answered ${JSON.stringify(syncs.map(outcomeOf))}; Ready=True over a deleted row in ${falseReady.length}, the row came back in ${resurrected.length}`)
  assert.deepEqual(resurrected, [], 'the row never comes back after finalize')
  assert.deepEqual(falseReady, [], 'no Ready=True for a row that is gone')
})
