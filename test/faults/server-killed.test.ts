import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { longestMs, outcomeOf, tally, type Answer } from './hook-calls.js'
import { startHookServer, startRig } from './hook-server.js'
import { rowsById } from '../helpers/postgres-writer-rows.js'
import { assertRowsMatchWriters } from './rows.js'
import { forEachConcurrently, replay, Writer, type WriterSpec } from './writers.js'

const WRITERS = 40
/** The hook server is SIGKILLed once this many calls of the load have answered. */
const KILL_AFTER_ANSWERS = 300
/** A bound on each writer's calls, far above what it makes before the kill (about KILL_AFTER_ANSWERS / WRITERS). */
const MAX_CALLS_PER_WRITER = 50
const TABLES = ['students', 'graduates']

test('the hook server SIGKILLed mid-load and restarted: no partial row, and replaying converges', async (t) => {
  const { postgres, schema, env, server: first } = await startRig(t)

  const writers = Array.from({ length: WRITERS }, (_, i) => new Writer(`writer-${i}`, {
    table: TABLES[i % TABLES.length] as string, name: `person ${i}`, age: 20 + i, country: 'portugal'
  }))
  await forEachConcurrently(writers, 10, async (writer) => { assert.equal(outcomeOf(await writer.call(first)), 'Ready') })

  // Every writer moves to the other table, then has its age edited, again and again, each call after the previous
  // answer, until a call gets no answer. That call's spec is the writer's latest state; the spec of its last
  // answered call is the last one acknowledged.
  const acknowledged = new Map(writers.map((w) => [w, { ...w.spec }]))
  const unanswered = new Map<Writer, { spec: WriterSpec, move: boolean }>()
  const answers: Answer[] = []
  let pending = 0
  const load = Promise.all(writers.map(async (writer) => {
    for (let step = 0; step < MAX_CALLS_PER_WRITER; step++) {
      const move = step % 2 === 0
      const spec = move
        ? { ...writer.spec, table: writer.spec.table === 'students' ? 'graduates' : 'students' }
        : { ...writer.spec, age: writer.spec.age + 1 }
      writer.edit(spec)
      pending++
      const answer = await writer.call(first)
      pending--
      if (answer.statusCode === undefined) {
        unanswered.set(writer, { spec, move })
        return
      }
      answers.push(answer)
      acknowledged.set(writer, spec)
    }
  }))
  const loadStarted = Date.now()
  while (answers.length < KILL_AFTER_ANSWERS) {
    assert.ok(first.running(), first.output())
    assert.ok(Date.now() - loadStarted < 60_000, `only ${answers.length} calls answered in a minute`)
    await sleep(5)
  }
  const inFlightAtKill = pending
  first.process.kill('SIGKILL')
  await load
  await first.exited

  assert.deepEqual(Object.keys(tally(answers)), ['sync: Ready'], 'every call answered before the kill succeeded')
  assert.equal(unanswered.size, WRITERS, 'every writer ends with one call that got no answer')

  // No partial row: each writer's row is in exactly one table, at its last acknowledged state or at the state of
  // the call the kill cut off (committed, or rolled back), never anything in between.
  const rows = await rowsById(await postgres.connect(), schema)
  assert.deepEqual([...rows.keys()].sort(), writers.map((w) => w.id).sort(), 'no row lost, no stray row')
  let committedUnanswered = 0
  let movesCutOff = 0
  for (const writer of writers) {
    const [row, ...others] = rows.get(writer.id) ?? []
    assert.deepEqual(others, [], `${writer.id} has one row, in one table`)
    const { spec: cutOff, move } = unanswered.get(writer) ?? assert.fail()
    const state = { table: row?.table, name: row?.name, age: row?.age, country: row?.country }
    assert.ok([acknowledged.get(writer), cutOff].some((s) => JSON.stringify(s) === JSON.stringify(state)),
      `${writer.id}: row ${JSON.stringify(state)} is the acknowledged state ${JSON.stringify(acknowledged.get(writer))} or the cut-off one ${JSON.stringify(cutOff)}`)
    if (JSON.stringify(cutOff) === JSON.stringify(state) && JSON.stringify(cutOff) !== JSON.stringify(acknowledged.get(writer))) committedUnanswered++
    if (move) movesCutOff++
  }

  const second = await startHookServer(t, env, { port: first.port })
  const replayed = await replay(second, writers)
  assert.deepEqual(replayed.map(outcomeOf), replayed.map(() => 'Ready'))
  const checked = await assertRowsMatchWriters(await postgres.connect(), schema, writers)

  t.diagnostic(`calls answered before the kill ${answers.length} (longest ${longestMs(answers)} ms); in flight at the kill ${inFlightAtKill}; unanswered ${unanswered.size} (${movesCutOff} of them table moves)`)
  t.diagnostic(`cut-off calls that had committed ${committedUnanswered}, rolled back or never sent ${unanswered.size - committedUnanswered}; rows checked after the kill ${writers.length}, after the replay ${checked}`)
})
