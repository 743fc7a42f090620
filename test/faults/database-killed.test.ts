import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { waitForReadiness } from '../../dev/server-process.js'
import { DATABASE_UNAVAILABLE_OUTCOMES, longestMs, outcomeOf, tally, type Answer } from './hook-calls.js'
import { CALL_BOUND_MS, startRig } from './hook-server.js'
import { assertRowsMatchWriters } from './rows.js'
import { replay, Writer, type WriterSpec } from './writers.js'

const WRITERS = 100
const CALLS_PER_WRITER = 5
/** One call starts every SLOT_MS: 500 calls over 10 s, each writer's calls one after another (as Metacontroller does). */
const SLOT_MS = 20
const KILL_AT_SLOT = 150
const RESTART_AT_SLOT = 300
const TABLES = ['students', 'graduates', 'alumni', 'staff']
const COUNTRIES = ['canada', 'india', 'brazil', 'kenya', 'japan']

/** What the user does to a writer before each of its calls; a call follows every step. */
type Step = { edit: Partial<WriterSpec> } | 'delete' | 'unchanged'

/**
 * Four kinds of history, by writer number: edited and moved twice; moved, then deleted and created again;
 * edited, moved, then deleted; deleted at once, created again, then moved and edited.
 */
function history (i: number): Step[] {
  const table = (offset: number): string => TABLES[(i + offset) % TABLES.length] as string
  switch (i % 4) {
    case 0: return ['unchanged', { edit: { age: 30 + i } }, { edit: { table: table(1) } }, { edit: { country: 'chile' } }, { edit: { table: table(2) } }]
    case 1: return ['unchanged', { edit: { table: table(1) } }, { edit: { age: 40 + i } }, 'delete', { edit: { table: table(2), age: 50 + i } }]
    case 2: return ['unchanged', { edit: { age: 60 + i } }, { edit: { table: table(1) } }, { edit: { age: 70 + i } }, 'delete']
    default: return ['unchanged', 'delete', { edit: { table: table(1) } }, { edit: { table: table(2) } }, { edit: { age: 80 + i } }]
  }
}

/** Applies a step as the API server would: a terminating object only gets its finalize retried. */
function apply (writer: Writer, step: Step): void {
  if (writer.terminating || step === 'unchanged') return
  if (step === 'delete') writer.delete()
  else writer.edit({ ...writer.spec, ...step.edit })
}

test('PostgreSQL SIGKILLed and restarted amid 500 syncs and finalizes: no hang, no crash, /readyz stays 200 and reports the database, replay converges', async (t) => {
  const { postgres, schema, server } = await startRig(t)
  await waitForReadiness(server, 200, 10_000)

  const writers = Array.from({ length: WRITERS }, (_, i) => new Writer(`writer-${String(i).padStart(3, '0')}`, {
    table: TABLES[i % TABLES.length] as string,
    name: `person ${i}`,
    age: 18 + i,
    country: COUNTRIES[i % COUNTRIES.length] as string
  }))
  const answers: Answer[] = []
  const started = performance.now()
  const untilSlot = async (slot: number): Promise<void> => { await sleep(Math.max(0, started + slot * SLOT_MS - performance.now())) }

  const load = Promise.all(writers.map(async (writer, i) => {
    for (const [round, step] of history(i).entries()) {
      await untilSlot(round * WRITERS + i)
      apply(writer, step)
      answers.push(await writer.call(server))
    }
  }))

  const fault = (async () => {
    await untilSlot(KILL_AT_SLOT)
    const killedAt = performance.now()
    await postgres.kill()
    await waitForReadiness(server, 200, 10_000, 'down')
    const notReadyAfterMs = performance.now() - killedAt
    await untilSlot(RESTART_AT_SLOT)
    const before = await fetch(`${server.probeUrl ?? server.url}/readyz`)
    assert.deepEqual([before.status, ((await before.json()) as { database: { status: string } }).database.status], [200, 'down'], '/readyz is 200, the database down, just before the restart')
    const restartedAt = performance.now()
    await postgres.restart()
    await waitForReadiness(server, 200, 30_000, 'up')
    return { notReadyAfterMs, downMs: restartedAt - killedAt, readyAfterRestartMs: performance.now() - restartedAt }
  })()

  const [, timeline] = await Promise.all([load, fault])
  const duringLoad = tally(answers)

  assert.equal(answers.length, WRITERS * CALLS_PER_WRITER)
  const unexpected = answers.filter((a) => !['Ready', 'finalized', ...DATABASE_UNAVAILABLE_OUTCOMES].includes(outcomeOf(a)))
  assert.deepEqual(unexpected.map(outcomeOf), [], 'every call answered 200: written, or DatabaseUnavailable')
  const slow = answers.filter((a) => a.ms >= CALL_BOUND_MS)
  assert.deepEqual(slow.map((a) => Math.round(a.ms)), [], `every call answered within ${CALL_BOUND_MS} ms`)
  const unavailable = answers.filter((a) => DATABASE_UNAVAILABLE_OUTCOMES.includes(outcomeOf(a))).length
  assert.ok(unavailable > 0, 'some calls met the outage')
  assert.ok(server.running(), `the hook server is still running:\n${server.output()}`)

  const replayed = await replay(server, writers)
  assert.deepEqual(replayed.filter((a) => !['Ready', 'finalized'].includes(outcomeOf(a))).map(outcomeOf), [], 'every replayed call succeeded')
  const rows = await assertRowsMatchWriters(await postgres.connect(), schema, writers)
  assert.ok(server.running())

  t.diagnostic(`calls ${answers.length} across ${WRITERS} writers; outcomes ${JSON.stringify(duringLoad)}`)
  t.diagnostic(`DatabaseUnavailable or finalized=false: ${unavailable}; longest call ${longestMs(answers)} ms (bound ${CALL_BOUND_MS} ms)`)
  t.diagnostic(`/readyz reported the database down ${Math.round(timeline.notReadyAfterMs)} ms after the kill; database down ${Math.round(timeline.downMs)} ms; /readyz reported it up ${Math.round(timeline.readyAfterRestartMs)} ms after the restart began`)
  t.diagnostic(`replay: ${replayed.length} calls ${JSON.stringify(tally(replayed))}; rows checked ${rows} (${writers.filter((w) => w.gone).length} writers deleted, none left behind)`)
})
