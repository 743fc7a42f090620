import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadConfig } from '../../hooks/runtime/config.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { deployment } from '../../dev/deployment.js'
import { fixture } from '../helpers/fixtures.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { slowBody, type SlowAnswer, type SlowBodyOptions } from '../helpers/slow-body.js'
import { startHookServer, testSchema } from './hook-server.js'

/**
 * Fifty clients that send their bodies slowly, or stall, against the hook server as the Deployment runs it (the Node.js
 * flags of its command, the default configuration): meanwhile every other client's hook calls, of all four
 * controllers, are answered at once; each slow body is answered 408 once it stalls while others wait for its memory, or
 * once HOOKS_BODY_TIMEOUT has passed, or 503 if it never got memory; and the process stays under the Deployment's
 * memory limit.
 */

const SLOW_CLIENTS = 50
const WINDOW_MS = 12_000
/** What "at once" means here: the promise is 1 s. */
const ANSWERED_WITHIN_MS = 1000
/** A normal call still unanswered then is counted as unanswered, so that a stalled server cannot stall the test. */
const GIVE_UP_MS = 5000

const { memoryLimitMiB, nodeArgs } = deployment()
const config = loadConfig({})
const NORMAL_CALLS: Array<[string, string]> = [
  ['/podset/sync', JSON.stringify(fixture('podset', 'first-sync'))],
  ['/bookstore/sync', JSON.stringify(fixture('bookstore', 'first-sync'))],
  ['/pulsar-consumer/sync', JSON.stringify(fixture('pulsar-consumer', 'sync-first'))],
  ['/postgres-writer/sync', JSON.stringify(fixture('postgres-writer', 'sync-create'))]
]

interface NormalCall {
  path: string
  /** undefined: no answer within GIVE_UP_MS. */
  status: number | undefined
  ms: number
}

async function normalCall (server: ServerProcess, path: string, body: string): Promise<NormalCall> {
  const started = performance.now()
  try {
    const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(GIVE_UP_MS) })
    await response.arrayBuffer()
    return { path, status: response.status, ms: performance.now() - started }
  } catch {
    return { path, status: undefined, ms: performance.now() - started }
  }
}

/**
 * Keeps `SLOW_CLIENTS` slow bodies open (`kinds` in turn, on the four hook paths in turn), opening a new one as soon as
 * one is answered, while the four controllers' hooks are called one after the other; for `WINDOW_MS`.
 */
async function underSlowClients (server: ServerProcess, kinds: Array<Omit<SlowBodyOptions, 'port' | 'path'>>): Promise<{ normal: NormalCall[], slow: SlowAnswer[] }> {
  const slow: SlowAnswer[] = []
  let stop = (): void => {}
  const stopped = new Promise<undefined>((resolve) => { stop = () => { resolve(undefined) } })
  const hold = async (index: number): Promise<void> => {
    for (;;) {
      const kind = kinds[index % kinds.length] as Omit<SlowBodyOptions, 'port' | 'path'>
      const client = slowBody({ ...kind, port: server.port, path: (NORMAL_CALLS[index % NORMAL_CALLS.length] as [string, string])[0] })
      const answer = await Promise.race([client.answered, stopped])
      client.close()
      if (answer === undefined) return
      slow.push(answer)
    }
  }
  const holders = Array.from({ length: SLOW_CLIENTS }, async (_, index) => { await hold(index) })
  // The slow clients open their connections and send their first bytes first.
  await sleep(1000)
  const normal: NormalCall[] = []
  const until = performance.now() + WINDOW_MS
  while (performance.now() < until) {
    for (const [path, body] of NORMAL_CALLS) normal.push(await normalCall(server, path, body))
  }
  stop()
  await Promise.all(holders)
  return { normal, slow }
}

/** How many of `items` have each key: `200: 12, 408: 3`. */
function counts<T> (items: readonly T[], key: (item: T) => string): string {
  const tally = new Map<string, number>()
  for (const item of items) tally.set(key(item), (tally.get(key(item)) ?? 0) + 1)
  return [...tally].map(([name, count]) => `${name}: ${count}`).join(', ')
}

function summary (normal: NormalCall[]): string {
  const ms = normal.map((call) => call.ms).sort((a, b) => a - b)
  const statuses = counts(normal, (call) => String(call.status ?? 'no answer'))
  return `${normal.length} calls (${statuses}), median ${ms[Math.floor(ms.length / 2)]?.toFixed(1)} ms, slowest ${ms.at(-1)?.toFixed(1)} ms`
}

async function checkUnderSlowClients (t: TestContext, kinds: Array<Omit<SlowBodyOptions, 'port' | 'path'>>): Promise<void> {
  const server = await startHookServer(t, { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: testSchema() }, { nodeArgs })
  // Every path answers once before: what is measured is the wait, not a first call's compilation.
  for (const [path, body] of NORMAL_CALLS) assert.equal((await normalCall(server, path, body)).status, 200, path)
  server.resetPeakRss()
  const { normal, slow } = await underSlowClients(server, kinds)
  const peak = server.peakRssMiB()
  const slowStatuses = counts(slow, (answer) => String(answer.status ?? 'closed'))
  const slowest = Math.max(...slow.map((answer) => answer.ms))
  t.diagnostic(`normal calls: ${summary(normal)}`)
  t.diagnostic(`slow clients answered: ${slow.length} (${slowStatuses}), the last after ${slowest.toFixed(0)} ms; peak RSS ${peak.toFixed(0)} MiB (limit ${memoryLimitMiB} MiB)`)

  for (const path of NORMAL_CALLS.map(([path]) => path)) assert.ok(normal.some((call) => call.path === path), `no call of ${path} was made`)
  const late = normal.filter((call) => call.status !== 200 || call.ms >= ANSWERED_WITHIN_MS)
  assert.deepEqual(late, [], `calls not answered 200 within ${ANSWERED_WITHIN_MS} ms: ${summary(normal)}`)
  assert.ok(slow.length >= SLOW_CLIENTS, `only ${slow.length} slow clients were answered in ${WINDOW_MS} ms`)
  for (const answer of slow) {
    // 408 for a body that stalled or ran out of time; 503 for one whose Content-Length never found memory to be read in.
    const refused = answer.status === 408 || (answer.status === 503 && /\r\nretry-after: 1\r\n[^]*no memory to receive the request body/i.test(answer.text))
    assert.ok(refused, `a slow client got ${answer.text.slice(0, 300) || 'no answer'} after ${answer.ms.toFixed(0)} ms`)
    // HOOKS_BODY_TIMEOUT, plus as much again at most for the time the server was too busy to read (a loaded machine).
    assert.ok(answer.ms < 2 * config.bodyTimeoutMs + 1000, `a slow client was answered after ${answer.ms.toFixed(0)} ms, HOOKS_BODY_TIMEOUT is ${config.bodyTimeoutMs} ms`)
  }
  assert.ok(peak < memoryLimitMiB, `peak RSS ${peak.toFixed(0)} MiB, limit ${memoryLimitMiB} MiB`)
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
}

test(`${SLOW_CLIENTS} clients trickling bodies (chunked, and Content-Length at HOOKS_BODY_LIMIT) stall no one and are refused`, async (t) => {
  await checkUnderSlowClients(t, [
    { length: 'chunked', burst: 16 * 1024, intervalMs: 250 },
    { length: config.bodyLimit, burst: 16 * 1024, intervalMs: 250 }
  ])
})

test(`${SLOW_CLIENTS} clients that send part of a body at the limit and stall stall no one, and the server stays under its memory limit`, async (t) => {
  await checkUnderSlowClients(t, [
    { length: 'chunked', burst: 4 * 1024 * 1024 },
    { length: config.bodyLimit, burst: 4 * 1024 * 1024 }
  ])
})
