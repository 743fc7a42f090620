import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ServerProcess } from '../../dev/server-process.js'
import { DATABASE_UNAVAILABLE_OUTCOMES, longestMs, outcomeOf, tally, type Answer } from './hook-calls.js'
import { startHookServer, startRig } from './hook-server.js'
import { Writer } from './writers.js'

const KILLS = 20
const CONCURRENCY = 64
const TABLES = ['students', 'graduates']

/**
 * The server must never exit because of the database. A pg client whose server dies emits 'error'; one without a
 * listener at that moment ends the process. Table moves keep transactions (checked-out clients) in flight.
 */
for (const poolMax of (process.env.KILL_POOLS ?? '2,10').split(',').map(Number)) {
  test(`PostgreSQL SIGKILLed ${KILLS} times under ${CONCURRENCY} concurrent table moves, PG_POOL_MAX=${poolMax}: no exit, every call answered`, async (t) => {
    const rig = await startRig(t, { PG_POOL_MAX: String(poolMax) })
    const { postgres, env } = rig
    let server: ServerProcess = rig.server
    let exits = 0
    const exitLogs: string[] = []

    const writers = Array.from({ length: CONCURRENCY }, (_, i) => new Writer(`mover-${i}`, { table: TABLES[i % 2] as string, name: `mover ${i}`, age: i, country: 'chile' }))
    const answers: Answer[] = []
    const running = { load: true }
    const load = Promise.all(writers.map(async (writer) => {
      while (running.load) {
        writer.edit({ ...writer.spec, table: writer.spec.table === TABLES[0] ? TABLES[1] as string : TABLES[0] as string })
        const answer = await writer.call(server)
        answers.push(answer)
        // As Metacontroller does, a refused call is retried a little later rather than at once.
        if (outcomeOf(answer) !== 'Ready') await sleep(50)
      }
    }))

    let killedWhileInFlight = 0
    for (let kill = 0; kill < KILLS; kill++) {
      const before = answers.length
      // Let the load run until some moves have succeeded again since the restart.
      for (let waited = 0; answers.slice(before).filter((a) => outcomeOf(a) === 'Ready').length < CONCURRENCY && waited < 10_000; waited += 20) await sleep(20)
      await sleep(Math.floor(Math.random() * 100))
      killedWhileInFlight += answers.length - before > 0 ? 1 : 0
      await postgres.kill()
      await sleep(300)
      await postgres.restart()
      if (!server.running()) {
        exits++
        exitLogs.push(server.output().split('\n').filter((line) => line.includes('rror')).slice(-3).join('\n'))
        server = await startHookServer(t, env, { port: server.port })
      }
    }
    for (let waited = 0; answers.slice(-CONCURRENCY).some((a) => outcomeOf(a) !== 'Ready') && waited < 20_000; waited += 100) await sleep(100)
    running.load = false
    await load
    if (!server.running()) exits++

    const outcomes = tally(answers)
    t.diagnostic(`PG_POOL_MAX=${poolMax}: ${KILLS} kills (${killedWhileInFlight} amid calls), ${answers.length} calls, outcomes ${JSON.stringify(outcomes)}, longest call ${longestMs(answers)} ms, server exits ${exits}`)
    assert.deepEqual(exitLogs, [], 'the server exited')
    assert.equal(exits, 0, 'the server never exited')
    const unexpected = answers.filter((a) => !['Ready', ...DATABASE_UNAVAILABLE_OUTCOMES].includes(outcomeOf(a)))
    assert.deepEqual(unexpected.map((a) => `${outcomeOf(a)}: ${a.body?.status?.conditions?.[0]?.message ?? a.error}`), [], 'every call answered 200: written, or DatabaseUnavailable')
    assert.ok(answers.some((a) => DATABASE_UNAVAILABLE_OUTCOMES.includes(outcomeOf(a))), 'some calls met a kill')
  })
}
