import assert from 'node:assert/strict'
import http from 'node:http'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { longestMs, outcomeOf, tally, type Answer } from './hook-calls.js'
import { pollHookBackends, startRig } from './hook-server.js'
import { Writer } from './writers.js'

const IN_FLIGHT = 30
const SHUTDOWN_DELAY_SECONDS = 3

interface Probe {
  /** The HTTP status, or the connection error's code. */
  result: number | string
  reusedSocket: boolean
  atMs: number
}

/** `GET url` through `agent` (false: on a new connection), timed from `since`. */
async function probe (url: string, agent: http.Agent | false, since: number): Promise<Probe> {
  return await new Promise((resolve) => {
    const request = http.get(url, { agent }, (response) => {
      response.resume()
      response.on('end', () => { resolve({ result: response.statusCode ?? 0, reusedSocket: request.reusedSocket, atMs: performance.now() - since }) })
    })
    request.on('error', (error: NodeJS.ErrnoException) => { resolve({ result: error.code ?? error.message, reusedSocket: request.reusedSocket, atMs: performance.now() - since }) })
  })
}

test('SIGTERM under load: readiness 503 first, new connections refused only after it, no in-flight hook fails, exit 0', async (t) => {
  const { postgres, schema, server } = await startRig(t, {
    // The held calls wait on a lock for the whole drain (about 4 s): a long statement timeout and call deadline, and
    // a pool slot for each.
    PG_STATEMENT_TIMEOUT: '20',
    PG_HOOK_DEADLINE: '9.5',
    PG_POOL_MAX: String(IN_FLIGHT + 5),
    HOOKS_SHUTDOWN_DELAY: String(SHUTDOWN_DELAY_SECONDS)
  })
  const admin = await postgres.connect()
  // Outside admin's lock-holding transaction, which would see pg_stat_activity as of its first read.
  const observer = await postgres.connect()
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 })
  t.after(() => { keepAlive.destroy() })

  const first = new Writer('first', { table: 'students', name: 'first', age: 1, country: 'peru' })
  assert.equal(outcomeOf(await first.call(server)), 'Ready')
  const initial = await probe(`${server.url}/readyz`, keepAlive, performance.now())
  assert.equal(initial.result, 200)

  // Hold every hook call on the table: they are in flight when SIGTERM arrives, and through the whole drain.
  await admin.query(`BEGIN; LOCK TABLE "${schema}".students IN ACCESS EXCLUSIVE MODE`)
  const writers = Array.from({ length: IN_FLIGHT }, (_, i) => new Writer(`held-${i}`, { table: 'students', name: `held ${i}`, age: i, country: 'peru' }))
  const inFlight = Promise.all(writers.map(async (writer) => await writer.call(server)))
  const waiting = await pollHookBackends(observer, "wait_event_type = 'Lock'", (backends) => backends.length === IN_FLIGHT, 20_000)
  assert.equal(waiting.length, IN_FLIGHT, `only ${waiting.length} of ${IN_FLIGHT} calls reached the lock`)

  const signalled = performance.now()
  server.process.kill('SIGTERM')
  // Probed on new connections until the signal has been handled: the keep-alive connection, probed while it is
  // being handled, could get a 200 marked `connection: close` and be closed.
  let notReady = await probe(`${server.url}/readyz`, false, signalled)
  while (notReady.result === 200 && notReady.atMs < 5000) notReady = await probe(`${server.url}/readyz`, false, signalled)
  assert.equal(notReady.result, 503, '/readyz turns 503 after SIGTERM')
  const onKeepAlive = await probe(`${server.url}/readyz`, keepAlive, signalled)
  assert.deepEqual([onKeepAlive.result, onKeepAlive.reusedSocket], [503, true], '/readyz answers 503 on the already-open keep-alive connection')
  const accepted = await probe(`${server.url}/healthz`, false, signalled)
  assert.equal(accepted.result, 200, 'a new connection is still accepted once readiness is 503')

  let refused = await probe(`${server.url}/healthz`, false, signalled)
  while (refused.result !== 'ECONNREFUSED' && refused.atMs < 15_000) {
    await sleep(100)
    refused = await probe(`${server.url}/healthz`, false, signalled)
  }
  assert.equal(refused.result, 'ECONNREFUSED', 'the listener closes after the delay')
  assert.ok(onKeepAlive.atMs < accepted.atMs && accepted.atMs < refused.atMs)
  assert.ok(server.running(), 'the process waits for its in-flight hooks')

  await admin.query('COMMIT')
  const answers: Answer[] = await inFlight
  assert.deepEqual(answers.map(outcomeOf), answers.map(() => 'Ready'), 'every in-flight hook completed')
  assert.equal(await server.exited, 0, server.output())
  const exitedAtMs = performance.now() - signalled
  const rows = await admin.query<{ count: number }>(`SELECT count(*)::int AS count FROM "${schema}".students`)
  assert.equal(rows.rows[0]?.count, IN_FLIGHT + 1)

  t.diagnostic(`in flight at SIGTERM ${IN_FLIGHT}: ${JSON.stringify(tally(answers))} (longest ${longestMs(answers)} ms, held on purpose); rows ${rows.rows[0]?.count}`)
  t.diagnostic(`after SIGTERM: /readyz 503 at ${Math.round(notReady.atMs)} ms, on the keep-alive connection at ${Math.round(onKeepAlive.atMs)} ms, a new connection accepted at ${Math.round(accepted.atMs)} ms, refused from ${Math.round(refused.atMs)} ms (HOOKS_SHUTDOWN_DELAY=${SHUTDOWN_DELAY_SECONDS}), exit 0 at ${Math.round(exitedAtMs)} ms`)
})
