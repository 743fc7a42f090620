import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadConfig } from '../../hooks/runtime/config.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { deployment } from '../../dev/deployment.js'
import { fixture } from '../helpers/fixtures.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { slowBody, wholeRequest, type SlowAnswer, type SlowBody } from '../helpers/slow-body.js'
import { startHookServer, testSchema } from './hook-server.js'
import { appliedPod, podSetParent, syncRequest } from '../../dev/api-server/podset-requests.js'
import { desiredPod } from '../../hooks/podset/sync.js'
import { lastAppliedChildren } from '../helpers/invalid-spec.js'

/**
 * Slow clients of every shape against the hook server as the Deployment runs it (the Node.js flags of its command,
 * the default configuration): meanwhile every other client's hook calls, of all four controllers, are answered 200
 * within 1 s; each slow client is refused (or its connection closed) within its bounds; and the process stays under
 * the Deployment's memory limit.
 */

/** What "at once" means here: the promise is 1 s. */
const ANSWERED_WITHIN_MS = 1000
/** A normal call still unanswered then is counted as unanswered, so that a stalled server cannot stall the test. */
const GIVE_UP_MS = 5000

const { memoryLimitMiB } = deployment()
const config = loadConfig({})
const NORMAL_CALLS: Array<[string, string]> = [
  ['/podset/sync', JSON.stringify(fixture('podset', 'first-sync'))],
  ['/bookstore/sync', JSON.stringify(fixture('bookstore', 'first-sync'))],
  ['/pulsar-consumer/sync', JSON.stringify(fixture('pulsar-consumer', 'sync-first'))],
  ['/postgres-writer/sync', JSON.stringify(fixture('postgres-writer', 'sync-create'))]
]

/** A slow client on `path` of the server at `port`. */
type Shape = (port: number, path: string) => SlowBody

const TRICKLE = { burst: 16 * 1024, intervalMs: 250 }
const [, podSetRequest] = NORMAL_CALLS[0] as [string, string]

/** The shapes of slow client, by name: each holds what it can of the server for as long as it can. */
const SHAPES: Record<string, Shape> = {
  'trickling, chunked': (port, path) => slowBody({ port, path, length: 'chunked', ...TRICKLE }),
  'trickling, Content-Length at the limit': (port, path) => slowBody({ port, path, length: config.bodyLimit, ...TRICKLE }),
  'stalled after the headers': (port, path) => slowBody({ port, path, length: config.bodyLimit }),
  'stalled after 4 MiB': (port, path) => slowBody({ port, path, length: config.bodyLimit, burst: 4 * 1024 ** 2 }),
  'a whole request under a Content-Length at the limit': (port, path) => slowBody({ port, path, length: config.bodyLimit, content: Buffer.from(podSetRequest), burst: podSetRequest.length }),
  'chunk-size lines with 8 KiB extensions': (port, path) => slowBody({ port, path, length: 'chunked', intervalMs: 250, step: 1, chunkExtension: 8 * 1024 }),
  'slow chunks of 4 KiB': (port, path) => slowBody({ port, path, length: 'chunked', intervalMs: 250, step: 4 * 1024 }),
  'trickling behind ten pipelined requests': (port, path) => slowBody({ port, path, length: config.bodyLimit, ...TRICKLE, earlier: { requests: Array.from({ length: 10 }, () => wholeRequest('/podset/sync', podSetRequest)), pipelined: true } }),
  'trickling on a kept-alive connection': (port, path) => slowBody({ port, path, length: config.bodyLimit, ...TRICKLE, earlier: { requests: [wholeRequest('/podset/sync', podSetRequest)], pipelined: false } }),
  'slow headers': (port, path) => slowBody({ port, path, length: config.bodyLimit, intervalMs: 250, slowHeaders: true })
}

/** Announces HOOKS_BODY_LIMIT and sends 17 KiB every 250 ms: just above what counted as stalled (16 KiB in 0.3 s). */
const AT_THE_STALL_RATE: Shape = (port, path) => slowBody({ port, path, length: config.bodyLimit, burst: 17 * 1024, intervalMs: 250, step: 17 * 1024 })

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

/** The hook server as the Deployment runs it; every path answered once, so that what is measured is not a first call's compilation. */
async function hookServer (t: TestContext): Promise<ServerProcess> {
  const server = await startHookServer(t, { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: testSchema() }, { deployed: true })
  for (const [path, body] of NORMAL_CALLS) assert.equal((await normalCall(server, path, body)).status, 200, path)
  return server
}

interface SlowRun {
  normal: NormalCall[]
  /** The answers of the slow clients (a new one opens as soon as one is answered), by shape. */
  slow: Map<string, SlowAnswer[]>
  peakRssMiB: number
}

/**
 * Keeps `count` clients of each shape open (on the four hook paths in turn), opening a new one as soon as one is
 * answered, while the four controllers' hooks are called one after the other for `windowMs`.
 */
async function underSlowClients (server: ServerProcess, shapes: Record<string, Shape>, count: number, windowMs: number): Promise<SlowRun> {
  server.resetPeakRss()
  const slow = new Map<string, SlowAnswer[]>(Object.keys(shapes).map((name) => [name, []]))
  let stop = (): void => {}
  const stopped = new Promise<undefined>((resolve) => { stop = () => { resolve(undefined) } })
  const hold = async (name: string, shape: Shape, index: number): Promise<void> => {
    for (;;) {
      const client = shape(server.port, (NORMAL_CALLS[index % NORMAL_CALLS.length] as [string, string])[0])
      const answer = await Promise.race([client.answered, stopped])
      client.close()
      if (answer === undefined) return
      slow.get(name)?.push(answer)
    }
  }
  const holders = Object.entries(shapes).flatMap(([name, shape]) => Array.from({ length: count }, async (_, index) => { await hold(name, shape, index) }))
  // The slow clients open their connections and send their first bytes first.
  await sleep(1000)
  const normal: NormalCall[] = []
  const until = performance.now() + windowMs
  while (performance.now() < until) {
    for (const [path, body] of NORMAL_CALLS) normal.push(await normalCall(server, path, body))
  }
  stop()
  await Promise.all(holders)
  return { normal, slow, peakRssMiB: server.peakRssMiB() }
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

function report (t: TestContext, run: SlowRun, what: string): void {
  t.diagnostic(`${what}: normal calls ${summary(run.normal)}; peak RSS ${run.peakRssMiB.toFixed(0)} MiB (limit ${memoryLimitMiB} MiB)`)
}

/** Every normal call, on every path, answered 200 within ANSWERED_WITHIN_MS; the process under its memory limit. */
function checkOthersServed (run: SlowRun, what: string): void {
  for (const path of NORMAL_CALLS.map(([path]) => path)) assert.ok(run.normal.some((call) => call.path === path), `no call of ${path} was made`)
  const late = run.normal.filter((call) => call.status !== 200 || call.ms >= ANSWERED_WITHIN_MS)
  assert.deepEqual(late, [], `${what}: calls not answered 200 within ${ANSWERED_WITHIN_MS} ms: ${summary(run.normal)}`)
  assert.ok(run.peakRssMiB < memoryLimitMiB, `${what}: peak RSS ${run.peakRssMiB.toFixed(0)} MiB, limit ${memoryLimitMiB} MiB`)
}

/**
 * A slow client's answer: refused (4xx, or 503 with Retry-After), or its connection closed, within
 * HOOKS_ADMISSION_TIMEOUT plus HOOKS_BODY_TIMEOUT of its arrival (a wait for memory, then the time to send its body). A 408 or 503 ends the
 * connection, its body cut short: the answer says `Connection: close`, so that a pooled client does not send on it.
 */
function checkRefused (name: string, answer: SlowAnswer): void {
  const what = `${name}: ${answer.text.slice(0, 300) || 'closed without an answer'} after ${answer.ms.toFixed(0)} ms`
  assert.ok(answer.status === undefined || (answer.status >= 400 && answer.status !== 500), what)
  if (answer.status === 503) assert.match(answer.text, /\r\nretry-after: 1\r\n/i, what)
  if (answer.status === 408 || answer.status === 503) {
    assert.match(answer.text, /\r\nconnection: close\r\n/i, what)
    assert.doesNotMatch(answer.text, /keep-alive/i, what)
  }
  assert.ok(answer.ms < config.admissionTimeoutMs + config.bodyTimeoutMs + 1000, `${what}: HOOKS_ADMISSION_TIMEOUT is ${config.admissionTimeoutMs} ms, HOOKS_BODY_TIMEOUT ${config.bodyTimeoutMs} ms`)
}

test(`five clients of each of ${Object.keys(SHAPES).length} shapes of slow client at once stall no one, and are refused`, async (t) => {
  const server = await hookServer(t)
  const run = await underSlowClients(server, SHAPES, 5, 10_000)
  for (const [name, answers] of run.slow) {
    t.diagnostic(`${name}: ${answers.length} answered (${counts(answers, (answer) => String(answer.status ?? 'closed'))}), the last after ${Math.max(0, ...answers.map((answer) => answer.ms)).toFixed(0)} ms`)
  }
  report(t, run, 'ten shapes at once')
  checkOthersServed(run, 'ten shapes at once')
  for (const [name, answers] of run.slow) {
    // Slow headers are Node.js's to time out (requestTimeout, 60 s): they hold a socket and a few bytes, no body memory.
    if (name === 'slow headers') continue
    assert.ok(answers.length >= 5, `${name}: only ${answers.length} answered`)
    for (const answer of answers) checkRefused(name, answer)
  }
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
})

test('clients at the stall rate, announcing HOOKS_BODY_LIMIT and sending 17 KiB every 250 ms, stall no one: 4, 8 and 16 of them', async (t) => {
  const server = await hookServer(t)
  const runs = new Map<number, SlowRun>()
  for (const count of [4, 8, 16]) {
    const run = await underSlowClients(server, { 'at the stall rate': AT_THE_STALL_RATE }, count, 6000)
    const answers = run.slow.get('at the stall rate') ?? []
    t.diagnostic(`${count} at the stall rate: ${answers.length} answered (${counts(answers, (answer) => String(answer.status ?? 'closed'))}), each after ${Math.min(...answers.map((answer) => answer.ms)).toFixed(0)}-${Math.max(...answers.map((answer) => answer.ms)).toFixed(0)} ms`)
    report(t, run, `${count} at the stall rate`)
    runs.set(count, run)
  }
  for (const [count, run] of runs) {
    checkOthersServed(run, `${count} at the stall rate`)
    for (const answer of run.slow.get('at the stall rate') ?? []) checkRefused('at the stall rate', answer)
  }
})

/**
 * A valid PodSet sync of exactly HOOKS_BODY_LIMIT whose answer is larger than the socket buffers between client and
 * server hold (over 6 MB): the CRD bounds a PodSet's own answer to 2 MB, which they hold whole, so its spec is one the
 * hook cannot use, and its answer keeps each of its 200 observed pods as last applied, each with a long command.
 */
function limitSizedSync (): { body: Buffer, answerBytes: number } {
  const parent = podSetParent({ spec: { replicas: -1, image: 'busybox', command: ['sleep', '3600'] } })
  for (let length = 40_000; ; length -= 500) {
    const spec = { replicas: 200, image: 'busybox', command: ['sh', '-c', `echo ${'x'.repeat(length)}`] }
    const pods = Array.from({ length: spec.replicas }, (_, ordinal) => appliedPod(parent, desiredPod({ name: 'sleepers', namespace: 'default' }, spec, ordinal)))
    const request = syncRequest(parent, pods)
    const text = JSON.stringify(request)
    const padding = config.bodyLimit - text.length - ',"padding":""'.length
    if (padding < 0) continue
    return { body: Buffer.from(`${text.slice(0, -1)},"padding":"${'a'.repeat(padding)}"}`), answerBytes: JSON.stringify(lastAppliedChildren(request)).length }
  }
}

test('clients that never read their answers stall no one, and their connections are closed', async (t) => {
  const { body, answerBytes } = limitSizedSync()
  assert.equal(body.length, config.bodyLimit)
  assert.ok(answerBytes > 6e6, `the answer is ${answerBytes} bytes`)
  const server = await hookServer(t)
  const started = performance.now()
  const readers = Array.from({ length: 4 }, () => slowBody({ port: server.port, path: '/podset/sync', length: body.length, content: body, burst: body.length, reads: false }))
  const run = await underSlowClients(server, {}, 0, 8000)
  report(t, run, 'four clients that never read')
  checkOthersServed(run, 'four clients that never read')
  const ms = performance.now() - started
  for (const reader of readers) reader.read()
  const answers = await Promise.all(readers.map(async (reader) => await Promise.race([reader.answered, sleep(5000).then(() => undefined)])))
  const received = answers.map((answer) => answer?.text.length ?? 0)
  t.diagnostic(`after ${(ms / 1000).toFixed(1)} s, the clients that never read had ${received.join(', ')} bytes of their ${answerBytes}-byte answers waiting, the rest dropped`)
  for (const answer of answers) assert.ok(answer !== undefined && answer.text.length < answerBytes, 'the server closed the connection, the answer unread')
})
