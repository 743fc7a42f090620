import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { deployment } from '../../dev/deployment.js'
import { MAX_ARGUMENT_LENGTH, MAX_COMMAND_ARGUMENTS } from '../../hooks/podset/resource.js'
import { WEBHOOK_TIMEOUT_SECONDS } from '../../hooks/framework/wire/webhook.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { fixture } from '../helpers/fixtures.js'
import { startHookServer, testSchema } from './hook-server.js'

/**
 * Clients that pipeline hook requests on their connections, reading their answers or never reading them, against a
 * hook server started as the Deployment starts it: the process stays up and under the Deployment's memory limit, a
 * client that reads gets every answer, in order, and another caller's small calls meanwhile are all answered within
 * Metacontroller's webhook timeout.
 */

const { memoryLimitMiB, nodeArgs } = deployment()
const SMALL_CALL_MS = WEBHOOK_TIMEOUT_SECONDS * 1000

/** A first PodSet sync named `name`, of `replicas` pods whose command has as many arguments, as long, as the CRD admits. */
function podSetSync (name: string, replicas: number): string {
  const request = fixture('podset', 'first-sync')
  request.parent.metadata.name = name
  request.parent.spec = { replicas, image: 'busybox', command: Array.from({ length: MAX_COMMAND_ARGUMENTS }, () => 'x'.repeat(MAX_ARGUMENT_LENGTH)) }
  return JSON.stringify(request)
}

function httpRequest (body: string): string {
  return `POST /podset/sync HTTP/1.1\r\nHost: hooks\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
}

interface Answer { status: number, children: number }

/**
 * The answers on one connection, read as they come: each one's status and, from its body, how many children it has.
 * Resolves when the server closes the connection or `expected` answers have come.
 */
async function readAnswers (port: number, requests: string, expected: number): Promise<Answer[]> {
  return await new Promise((resolve, reject) => {
    const answers: Answer[] = []
    let buffered = Buffer.alloc(0)
    const socket = connect(port, '127.0.0.1', () => { socket.write(requests) })
    socket.on('data', (data) => {
      buffered = Buffer.concat([buffered, data])
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n')
        if (headEnd === -1) return
        const head = buffered.subarray(0, headEnd).toString('latin1')
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1])
        if (buffered.length < headEnd + 4 + length) return
        const body = JSON.parse(buffered.subarray(headEnd + 4, headEnd + 4 + length).toString()) as { children?: unknown[] }
        answers.push({ status: Number(head.split(' ')[1]), children: body.children?.length ?? -1 })
        buffered = buffered.subarray(headEnd + 4 + length)
        if (answers.length === expected) socket.destroy()
      }
    })
    socket.on('close', () => { resolve(answers) })
    socket.on('error', reject)
  })
}

/** Connections that send their requests and never read: closed after `holdMs`. */
async function neverRead (port: number, requests: string, connections: number, holdMs: number): Promise<void> {
  await Promise.all(Array.from({ length: connections }, async () => {
    const socket = connect(port, '127.0.0.1', () => { socket.write(requests) })
    socket.pause()
    socket.on('error', () => {})
    await sleep(holdMs)
    socket.destroy()
  }))
}

interface SmallCall { status: number | undefined, ms: number, error?: string }

/** A small PodSet call every 100 ms until `done` settles. */
async function smallCallsUntil (server: ServerProcess, done: Promise<unknown>): Promise<SmallCall[]> {
  const state = { finished: false }
  void done.finally(() => { state.finished = true })
  const body = podSetSync('small', 10)
  const calls: SmallCall[] = []
  while (!state.finished) {
    const started = performance.now()
    try {
      const response = await fetch(`${server.url}/podset/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) })
      await response.arrayBuffer()
      calls.push({ status: response.status, ms: performance.now() - started })
    } catch (error) {
      calls.push({ status: undefined, ms: performance.now() - started, error: String(error) })
    }
    await sleep(100)
  }
  return calls
}

/** Runs `clients` against a fresh server with another caller's small calls meanwhile; checks the process and those calls. */
async function withSmallCalls (t: TestContext, clients: (server: ServerProcess) => Promise<void>): Promise<void> {
  const server = await startHookServer(t, { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: testSchema() }, { nodeArgs })
  server.resetPeakRss()
  const done = clients(server)
  const small = await smallCallsUntil(server, done)
  await done
  const alive = server.running()
  const peak = alive ? server.peakRssMiB() : NaN
  const slowest = Math.max(...small.map((call) => call.ms))
  t.diagnostic(`${alive ? `peak RSS ${peak.toFixed(0)} MiB` : 'the server died'}; ${small.length} small calls, ` +
    `${small.filter((call) => call.status !== 200).length} not answered 200, slowest ${slowest.toFixed(0)} ms`)
  assert.ok(alive, `the server died:\n${server.output().slice(-2000)}`)
  assert.ok(peak < memoryLimitMiB, `peak RSS ${peak.toFixed(0)} MiB, over the Deployment's ${memoryLimitMiB} MiB`)
  for (const call of small) assert.equal(call.status, 200, JSON.stringify(call))
  assert.ok(slowest < SMALL_CALL_MS, `a small call took ${slowest.toFixed(0)} ms`)
}

const DEPLOYMENT = `under the Deployment's ${memoryLimitMiB} MiB (${nodeArgs.join(' ')})`
/** A 2 KB request whose answer holds 2,000 pods, as the CRD admits. */
const amplifying = httpRequest(podSetSync('amplifying', 2000))

for (const [connections, depth] of [[1, 200], [8, 50], [64, 10], [64, 200]] as const) {
  test(`${connections} connection(s) each pipelining ${depth} 2,000-pod syncs and never reading: ${DEPLOYMENT}, small calls answered`, async (t) => {
    await withSmallCalls(t, async (server) => { await neverRead(server.port, amplifying.repeat(depth), connections, 8000) })
  })
}

test('a connection pipelining 200 syncs, each of another size, gets every answer in order', async (t) => {
  await withSmallCalls(t, async (server) => {
    const requests = Array.from({ length: 200 }, (_, index) => httpRequest(podSetSync(`in-order-${index}`, index + 1))).join('')
    const answers = await readAnswers(server.port, requests, 200)
    assert.deepEqual(answers, Array.from({ length: 200 }, (_, index) => ({ status: 200, children: index + 1 })))
  })
})

test(`8 connections each pipelining 20 2,000-pod syncs and reading: all 160 answered in full, ${DEPLOYMENT}`, async (t) => {
  await withSmallCalls(t, async (server) => {
    const answers = await Promise.all(Array.from({ length: 8 }, async () => await readAnswers(server.port, amplifying.repeat(20), 20)))
    for (const connection of answers) assert.deepEqual(connection, Array.from({ length: 20 }, () => ({ status: 200, children: 2000 })))
  })
})
