import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { podSet } from '../../hooks/podset/index.js'
import { BODIES_HELD, BodyAdmission, ClientGone, PROGRESS_BYTES, STALL_MS, type BodyClaim } from '../../hooks/http/body-admission.js'
import type { CompositeController } from '../../hooks/framework/controller.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { slowBody } from '../helpers/slow-body.js'

/**
 * hooks/http/body-admission.ts: memory set aside for a Content-Length before a body is read, chunked bodies charged
 * the bytes they sent, stalled bodies giving way to waiting ones, parsing one body limit's worth at a time, and every
 * wait bounded; then over real sockets, the answers that say so.
 */

const LIMIT = 1000
const CAPACITY = BODIES_HELD * LIMIT

/** A body being read, as the reader sees its claim: what it was told, and whether it may go on. */
class Reader {
  readonly claim: BodyClaim
  refusal: Error | undefined
  resumed = 0
  /** Whether it could start reading at once. */
  readonly started: boolean

  constructor (admission: BodyAdmission, announced: number) {
    this.claim = admission.claim()
    this.started = this.claim.start({ refuse: (error) => { this.refusal = error }, resume: () => { this.resumed++ } }, announced)
  }
}

/** Memory for bodies with these bounds, and readers of bodies in it; every claim is released after the test. */
function bodies (t: TestContext, bodyTimeoutMs = 60_000, admissionTimeoutMs = 60_000, limit = LIMIT): { memory: BodyAdmission, reader: (announced?: number) => Reader } {
  const memory = new BodyAdmission({ limit, bodyTimeoutMs, admissionTimeoutMs })
  const readers: Reader[] = []
  t.after(() => { for (const reader of readers) reader.claim.release() })
  return { memory, reader: (announced = 0) => { const reader = new Reader(memory, announced); readers.push(reader); return reader } }
}

test('chunked bodies are charged the bytes they sent, and give them back once answered', (t) => {
  const { memory, reader } = bodies(t)
  const trickling = Array.from({ length: 50 }, () => reader())
  for (const body of trickling) assert.equal(body.claim.take(1), true)
  assert.equal(memory.held, 50)
  const whole = reader()
  assert.equal(whole.claim.take(LIMIT), true, 'a body at the limit still fits beside fifty trickling ones')
  whole.claim.arrived()
  whole.claim.release()
  whole.claim.release()
  for (const body of trickling) body.claim.release()
  assert.equal(memory.held, 0)
  assert.deepEqual([memory.arriving.size, memory.parsing], [0, 0])
})

test('a body is read once its Content-Length fits, and holds its bytes once it has arrived; the smallest waiting body goes first', (t) => {
  const { memory, reader } = bodies(t)
  const first = reader(3000)
  assert.equal(first.started, true)
  assert.equal(memory.held, 3000, 'its length is set aside before a byte arrives')
  assert.equal(first.claim.take(1000), true)
  assert.equal(memory.held, 3000)
  const large = reader(2000)
  const small = reader(500)
  assert.deepEqual([large.started, small.started], [false, true], 'the large one waits, unread; the small one fits beside')
  const smaller = reader(600)
  assert.equal(smaller.started, false)
  assert.equal(first.claim.take(2000), true)
  first.claim.arrived()
  first.claim.release()
  assert.deepEqual([large.resumed, smaller.resumed], [1, 1], 'both fit once the first is answered')
  assert.equal(memory.held, 500 + 2000 + 600)

  const holder = reader(CAPACITY - 3100)
  assert.equal(holder.started, true)
  const big = reader(900)
  const little = reader(100)
  assert.deepEqual([big.started, little.started], [false, false])
  small.claim.release()
  assert.deepEqual([big.resumed, little.resumed], [0, 1], 'the 500 bytes freed take the smaller one, though it asked later')
})

test('a stalled body gives way (408) to a waiting one, after STALL_MS; a body that keeps arriving does not', async (t) => {
  const { memory, reader } = bodies(t, 60_000, 60_000, 64 * 1024)
  const stalled = reader(memory.capacity / 2)
  const arriving = reader(memory.capacity / 2)
  assert.equal(stalled.claim.take(100), true)
  const keepArriving = setInterval(() => { arriving.claim.take(PROGRESS_BYTES) }, 50)
  t.after(() => { clearInterval(keepArriving) })
  const waiting = reader(1000)
  assert.equal(waiting.started, false)
  const refusal = (): Error | undefined => stalled.refusal
  assert.equal(refusal(), undefined, 'not stalled yet')
  await sleep(STALL_MS + 300)
  assert.match(refusal()?.message ?? '', /^request body stalled \(under 16 KiB in 0.3 s\) after [\d.]+ s while other calls waited for the memory it held/)
  assert.equal((refusal() as { statusCode?: number }).statusCode, 408)
  assert.equal(arriving.refusal, undefined)
  assert.equal(waiting.resumed, 1)
})

test('bodies that have arrived never give way: a newer body waits for their room, and goes on in turn once they are answered', (t) => {
  const { memory, reader } = bodies(t)
  const arrived = Array.from({ length: BODIES_HELD }, () => reader())
  for (const body of arrived) {
    assert.equal(body.claim.take(LIMIT), true)
    body.claim.arrived()
  }
  const first = reader()
  const second = reader()
  assert.equal(first.claim.take(600), false)
  assert.equal(second.claim.take(300), false)
  assert.deepEqual([first.resumed, second.resumed], [0, 0])
  arrived[0]?.claim.release()
  assert.deepEqual([first.resumed, second.resumed], [1, 1])
  assert.equal(memory.held, (BODIES_HELD - 1) * LIMIT + 900)
  assert.ok(arrived.every((body) => body.refusal === undefined))
})

test('a body that waits for room longer than HOOKS_ADMISSION_TIMEOUT gets 503; one slower than HOOKS_BODY_TIMEOUT 408', async (t) => {
  const { memory, reader } = bodies(t, 100, 50)
  const holder = reader()
  holder.claim.take(CAPACITY)
  holder.claim.arrived()
  const waiting = reader()
  assert.equal(waiting.claim.take(10), false)
  const slow = reader()
  await sleep(250)
  assert.match(waiting.refusal?.message ?? '', /^no memory to receive the request body within HOOKS_ADMISSION_TIMEOUT \(0.05 s\): the bodies of other calls hold it; retry in 1 s/)
  assert.equal((waiting.refusal as { statusCode?: number }).statusCode, 503)
  assert.match(slow.refusal?.message ?? '', /^request body did not arrive within HOOKS_BODY_TIMEOUT \(0.1 s\): send the whole body at once/)
  assert.equal((slow.refusal as { statusCode?: number }).statusCode, 408)
  assert.equal(holder.refusal, undefined, 'a body that has arrived has no deadline here')
  assert.equal(memory.held, CAPACITY)
  assert.equal(memory.waitingForRoom.length, 0)
})

test('time the server spent blocked, unable to read a body, is added to its HOOKS_BODY_TIMEOUT, up to as much again', async (t) => {
  const { memory, reader } = bodies(t, 300)
  const body = reader()
  body.claim.take(10)
  const blockedUntil = performance.now() + 400
  while (performance.now() < blockedUntil);
  const refusal = (): Error | undefined => body.refusal
  await sleep(50)
  assert.equal(refusal(), undefined, 'the 400 ms the server was busy do not count')
  assert.ok(memory.stalledMs >= 250, `${memory.stalledMs} ms`)
  await sleep(400)
  assert.match(refusal()?.message ?? '', /^request body did not arrive within HOOKS_BODY_TIMEOUT \(0.3 s\)/, 'refused once 300 + 300 ms have passed')
})

test('parsing takes HOOKS_BODY_LIMIT of bodies at a time, in arrival order, any body alone; a wait is bounded, and ends when the client goes', async (t) => {
  const { memory, reader } = bodies(t, 60_000, 80)
  const arrived = (bytes: number): Reader => {
    const body = reader()
    body.claim.take(bytes)
    body.claim.arrived()
    return body
  }
  const huge = arrived(LIMIT)
  await huge.claim.parse()
  const [a, b, c] = [arrived(600), arrived(300), arrived(200)]
  const parsed: string[] = []
  const parse = (name: string, reader: Reader): Promise<void> => reader.claim.parse().then(() => { parsed.push(name) }, (error: Error) => { parsed.push(`${name}: ${error.message}`) })
  const waits = [parse('a', a), parse('b', b), parse('c', c)]
  await sleep(10)
  assert.deepEqual(parsed, [])
  huge.claim.release()
  await sleep(10)
  assert.deepEqual(parsed, ['a', 'b'], 'c waits: 600 + 300 + 200 pass the limit')
  c.claim.release()
  await Promise.all(waits)
  assert.deepEqual(parsed, ['a', 'b', `c: ${new ClientGone('while it waited for memory to parse its body').message}`])

  const late = arrived(900)
  await sleep(100)
  await assert.rejects(late.claim.parse(), /^HookError: no memory to parse the request body within HOOKS_ADMISSION_TIMEOUT \(0.08 s\): other bodies are being parsed/)
  a.claim.release()
  b.claim.release()
  assert.deepEqual([memory.held, memory.parsing, memory.waitingToParse.length], [0, 0, 0])
})

/** PodSet under another name, whose sync waits until `open` is called: a call that holds its body's memory. */
function gatedPodSet (): { controller: CompositeController<any>, open: () => void } {
  let open = (): void => {}
  const gate = new Promise<void>((resolve) => { open = resolve })
  const controller: CompositeController<any> = { ...podSet, name: 'gated', hooks: { sync: async (request, context) => { await gate; return podSet.hooks.sync(request, context) } } }
  return { controller, open }
}

test('over HTTP: a body slower than HOOKS_BODY_TIMEOUT gets 408 and its connection is closed, while other calls are answered at once', async (t) => {
  const { app } = await build(t, { databaseUrl: false, controllers: [podSet], env: { HOOKS_BODY_TIMEOUT: '0.5' } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const slow = [
    slowBody({ port, path: '/podset/sync', length: 'chunked', burst: 100, intervalMs: 50 }),
    slowBody({ port, path: '/podset/sync', length: 1024 ** 2, burst: 100, intervalMs: 50 })
  ]
  const started = performance.now()
  const fast = await fetch(`http://127.0.0.1:${port}/podset/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fixture('podset', 'first-sync')) })
  assert.equal(fast.status, 200)
  assert.ok(performance.now() - started < 400, 'answered while the slow bodies arrive')
  for (const answer of await Promise.all(slow.map(async (client) => await client.answered))) {
    assert.equal(answer.status, 408, answer.text)
    assert.ok(answer.ms >= 500 && answer.ms < 1500, `${answer.ms} ms`)
    assert.match(answer.text, /\r\n\r\n\{"error":"Request Timeout","message":"request body did not arrive within HOOKS_BODY_TIMEOUT \(0.5 s\)/)
  }
  // The server closed each connection, after the answer.
  for (const client of slow) assert.ok(await client.closed < 3000, 'closed by the server')
})

test('over HTTP: a call that cannot be parsed within HOOKS_ADMISSION_TIMEOUT gets 503 with Retry-After, and a later one is served', async (t) => {
  const { controller, open } = gatedPodSet()
  const { app } = await build(t, { databaseUrl: false, controllers: [controller], env: { HOOKS_BODY_LIMIT: '8Ki', HOOKS_ADMISSION_TIMEOUT: '0.2' } })
  const request = fixture('podset', 'first-sync')
  const large = { ...request, padding: 'x'.repeat(5000) }
  const holding = app.inject({ method: 'POST', url: '/gated/sync', payload: large })
  await sleep(50)
  const refused = await app.inject({ method: 'POST', url: '/gated/sync', payload: large })
  assert.equal(refused.statusCode, 503, refused.body)
  assert.equal(refused.headers['retry-after'], '1')
  assert.deepEqual(refused.json(), {
    error: 'Service Unavailable',
    message: 'no memory to parse the request body within HOOKS_ADMISSION_TIMEOUT (0.2 s): other bodies are being parsed; retry in 1 s (Metacontroller retries by itself)'
  })
  open()
  assert.equal((await holding).statusCode, 200)
  assert.equal((await app.inject({ method: 'POST', url: '/gated/sync', payload: large })).statusCode, 200)
})
