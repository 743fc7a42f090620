import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { deployment } from '../../dev/deployment.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { MAX_ARGUMENT_LENGTH, MAX_COMMAND_ARGUMENTS } from '../../hooks/podset/resource.js'
import { fixture } from '../helpers/fixtures.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { startHookServer, testSchema } from './hook-server.js'

/**
 * Another caller's small calls while clients press a hook server started as the Deployment starts it: a 10-pod PodSet
 * sync and a PostgresWriter sync in turn, one every 100 ms, each of which must be answered 200 within SMALL_CALL_MS at
 * the 99th percentile, and the process must stay up and under the Deployment's memory limit.
 */

export const { memoryLimitMiB, nodeArgs } = deployment()
export const DEPLOYMENT = `under the Deployment's ${memoryLimitMiB} MiB (${nodeArgs.join(' ')})`

/** What a small call may take, at the 99th percentile, however busy the server is with other callers' large ones. */
export const SMALL_CALL_MS = 1000

/** A first PodSet sync named `name`, of `replicas` pods whose command has as many arguments, as long, as the CRD admits. */
export function podSetSync (name: string, replicas: number): string {
  const request = fixture('podset', 'first-sync')
  request.parent.metadata.name = name
  request.parent.spec = { replicas, image: 'busybox', command: Array.from({ length: MAX_COMMAND_ARGUMENTS }, () => 'x'.repeat(MAX_ARGUMENT_LENGTH)) }
  return JSON.stringify(request)
}

/** A request of 2 KB whose answer is 1.6 MB: 2,000 pods, as the CRD admits. */
export const AMPLIFYING_SYNC = podSetSync('amplifying', 2000)

const SMALL_CALLS: Array<[string, string]> = [
  ['/podset/sync', podSetSync('small', 10)],
  ['/postgres-writer/sync', JSON.stringify(fixture('postgres-writer', 'sync-create'))]
]

interface SmallCall { path: string, status: number | undefined, ms: number, error?: string }

/** A small call every 100 ms, the kinds in turn, until `done` settles. */
async function smallCallsUntil (server: ServerProcess, done: Promise<unknown>): Promise<SmallCall[]> {
  const state = { finished: false }
  void done.finally(() => { state.finished = true })
  const calls: SmallCall[] = []
  while (!state.finished) {
    const [path, body] = SMALL_CALLS[calls.length % SMALL_CALLS.length] as [string, string]
    const started = performance.now()
    try {
      const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) })
      await response.arrayBuffer()
      calls.push({ path, status: response.status, ms: performance.now() - started })
    } catch (error) {
      calls.push({ path, status: undefined, ms: performance.now() - started, error: String(error) })
    }
    await sleep(100)
  }
  return calls
}

/** The `fraction` percentile of `values`. */
function percentile (values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? NaN
}

/**
 * Runs `clients` against a fresh hook server with small calls meanwhile; checks the process and those calls, and
 * returns what `clients` returned.
 */
export async function withSmallCalls<T> (t: TestContext, clients: (server: ServerProcess) => Promise<T>): Promise<T> {
  const server = await startHookServer(t, { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: testSchema() }, { deployed: true })
  server.resetPeakRss()
  const done = clients(server)
  const small = await smallCallsUntil(server, done)
  const result = await done
  const alive = server.running()
  const peak = alive ? server.peakRssMiB() : NaN
  const times = small.map((call) => call.ms)
  t.diagnostic(`${alive ? `peak RSS ${peak.toFixed(0)} MiB` : 'the server died'}; ${small.length} small calls, ` +
    `${small.filter((call) => call.status !== 200).length} not answered 200, median ${percentile(times, 0.5).toFixed(0)} ms, ` +
    `p99 ${percentile(times, 0.99).toFixed(0)} ms, slowest ${Math.max(...times).toFixed(0)} ms`)
  assert.ok(alive, `the server died:\n${server.output().slice(-2000)}`)
  assert.ok(peak < memoryLimitMiB, `peak RSS ${peak.toFixed(0)} MiB, over the Deployment's ${memoryLimitMiB} MiB`)
  for (const call of small) assert.equal(call.status, 200, JSON.stringify(call))
  assert.ok(percentile(times, 0.99) < SMALL_CALL_MS, `small calls' p99 ${percentile(times, 0.99).toFixed(0)} ms`)
  return result
}
