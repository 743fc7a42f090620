import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { deployment } from '../../dev/deployment.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { worstResource } from '../../dev/worst-spec.js'
import { podSet } from '../../hooks/podset/index.js'
import { WEBHOOK_TIMEOUT_SECONDS } from '../../hooks/framework/wire/webhook.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { fixture } from '../helpers/fixtures.js'
import { startHookServer, testSchema } from './hook-server.js'

/**
 * PodSets whose small requests ask for answers far larger than themselves, one and many at once, each against a hook
 * server started as the Deployment starts it (the Node.js flags of its command): the process stays up and under the
 * Deployment's memory limit, every such call is answered within Metacontroller's webhook timeout, and the other
 * controllers' calls made meanwhile are all answered.
 */

const { memoryLimitMiB, nodeArgs } = deployment()
const WEBHOOK_TIMEOUT_MS = WEBHOOK_TIMEOUT_SECONDS * 1000
const OTHER_CALLS: Array<[string, string]> = [
  ['/bookstore/sync', JSON.stringify(fixture('bookstore', 'first-sync'))],
  ['/pulsar-consumer/sync', JSON.stringify(fixture('pulsar-consumer', 'sync-first'))],
  ['/postgres-writer/sync', JSON.stringify(fixture('postgres-writer', 'sync-create'))]
]

/** A first PodSet sync (no pod yet) of `spec`. */
function podSetSync (spec: unknown): Record<string, any> {
  const request = fixture('podset', 'first-sync')
  request.parent.spec = spec
  return request
}

/**
 * A PodSet stored before the CRD bounded its command: 10,000 pods whose command's last argument pads the request to
 * `bytes`, so that each pod of the answer is about as large as the request.
 */
function amplifying (bytes: number): string {
  const request = podSetSync({ replicas: 10_000, image: 'busybox', command: ['sh', '-c', ''] })
  request.parent.spec.command[2] = `echo ${'x'.repeat(bytes - JSON.stringify(request).length - 5)}`
  const body = JSON.stringify(request)
  assert.equal(body.length, bytes)
  return body
}

/** The PodSet that asks for the largest answer the CRD admits (dev/worst-spec.ts): 2,000 pods, 2.5 MB. */
const worst = JSON.stringify(podSetSync(worstResource(podSet.resource).spec))

/**
 * How many PodSets Metacontroller syncs at once: its workers per controller (`--workers`, 5 by default), one parent
 * each. Twelve full answers at once take up to 9 s on a loaded 2-core machine, near the webhook timeout.
 */
const METACONTROLLER_WORKERS = 5

interface Call {
  status: number | undefined
  ready: { status?: string, reason?: string } | undefined
  children: number | undefined
  ms: number
  error?: string
}

async function call (server: ServerProcess, path: string, body: string): Promise<Call> {
  const started = performance.now()
  try {
    const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(2 * WEBHOOK_TIMEOUT_MS) })
    const answer = await response.json() as { status?: { conditions?: Array<{ type: string, status?: string, reason?: string }> }, children?: unknown[] }
    return { status: response.status, ready: answer.status?.conditions?.find((condition) => condition.type === 'Ready'), children: answer.children?.length, ms: performance.now() - started }
  } catch (error) {
    return { status: undefined, ready: undefined, children: undefined, ms: performance.now() - started, error: String((error as { cause?: unknown }).cause ?? error) }
  }
}

/** Calls the other controllers' hooks one after the other until `done` settles. */
async function otherCallsUntil (server: ServerProcess, done: Promise<unknown>): Promise<Call[]> {
  const state = { finished: false }
  void done.finally(() => { state.finished = true })
  const calls: Call[] = []
  while (!state.finished) {
    for (const [path, body] of OTHER_CALLS) calls.push(await call(server, path, body))
  }
  return calls
}

/** Sends `body` to /podset/sync `times` at once, with the other calls meanwhile; checks what the report promises. */
async function sendAtOnce (t: TestContext, body: string, times: number, expected: { reason: string, children: number }, env: Record<string, string> = {}): Promise<void> {
  const server = await startHookServer(t, { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: testSchema(), ...env }, { deployed: true })
  server.resetPeakRss()
  const sent = Promise.all(Array.from({ length: times }, async () => await call(server, '/podset/sync', body)))
  const others = await otherCallsUntil(server, sent)
  const answers = await sent
  const alive = server.running()
  const peak = alive ? server.peakRssMiB() : NaN
  t.diagnostic(`${(body.length / 1000).toFixed(1)} KB, ${times} at once: ${[...new Set(answers.map((a) => a.status === 200 ? `${a.ready?.reason} (${a.children} children)` : `HTTP ${a.status} ${a.error ?? ''}`))].join(', ')}; ` +
    `slowest ${Math.max(...answers.map((a) => a.ms)).toFixed(0)} ms; ${alive ? `peak RSS ${peak.toFixed(0)} MiB` : 'the server died'}; ` +
    `${others.length} other calls, ${others.filter((o) => o.status !== 200).length} not answered 200, slowest ${Math.max(0, ...others.map((o) => o.ms)).toFixed(0)} ms`)
  assert.ok(alive, `the server died:\n${server.output().slice(-2000)}`)
  for (const answer of answers) {
    assert.deepEqual([answer.status, answer.ready?.status, answer.ready?.reason, answer.children], [200, 'False', expected.reason, expected.children], JSON.stringify(answer))
    assert.ok(answer.ms < WEBHOOK_TIMEOUT_MS, `answered in ${answer.ms.toFixed(0)} ms`)
  }
  assert.ok(peak < memoryLimitMiB, `peak RSS ${peak.toFixed(0)} MiB`)
  for (const other of others) {
    assert.equal(other.status, 200, `another controller's call: ${JSON.stringify(other)}`)
    assert.ok(other.ms < WEBHOOK_TIMEOUT_MS, `another controller's call answered in ${other.ms.toFixed(0)} ms`)
  }
}

const DEPLOYMENT = `under the Deployment's ${memoryLimitMiB} MiB (${nodeArgs.join(' ')})`

test(`a 21 KB PodSet of 10,000 pods with a 20 KB command (stored before the CRD's bounds): Ready=False InvalidSpec, ${DEPLOYMENT}`, async (t) => {
  await sendAtOnce(t, amplifying(21_000), 1, { reason: 'InvalidSpec', children: 0 })
})

test(`eight such PodSets of 6.7 KB at once: Ready=False InvalidSpec, ${DEPLOYMENT}`, async (t) => {
  await sendAtOnce(t, amplifying(6_700), 8, { reason: 'InvalidSpec', children: 0 })
})

test(`twelve such PodSets of 3.7 KB at once: Ready=False InvalidSpec, ${DEPLOYMENT}`, async (t) => {
  await sendAtOnce(t, amplifying(3_700), 12, { reason: 'InvalidSpec', children: 0 })
})

test(`five PodSets that ask for the largest answer the CRD admits, at once, as Metacontroller's workers send them: each answered in full, ${DEPLOYMENT}`, async (t) => {
  await sendAtOnce(t, worst, METACONTROLLER_WORKERS, { reason: 'PodsUnavailable', children: 2000 })
})

test(`twelve of them at once on a server whose HOOKS_BODY_LIMIT is 1Mi: Ready=False AnswerTooLarge, ${DEPLOYMENT}`, async (t) => {
  await sendAtOnce(t, worst, 12, { reason: 'AnswerTooLarge', children: 0 }, { HOOKS_BODY_LIMIT: '1Mi' })
})
