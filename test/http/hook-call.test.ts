import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setImmediate as turn } from 'node:timers/promises'
import type { CompositeController } from '../../hooks/framework/controller.js'
import { LINGER_MS, SLICE_BYTES } from '../../hooks/http/hook-call.js'
import { TICK_MS } from '../../hooks/http/body-admission.js'
import { podSet } from '../../hooks/podset/index.js'
import { podSetParent, syncRequest } from '../../dev/api-server/podset-requests.js'
import { build, type TestApp } from '../helpers/app.js'
import { FakeClock } from '../helpers/fake-clock.js'
import { fixture } from '../helpers/fixtures.js'
import { slowBody } from '../helpers/slow-body.js'

/**
 * hooks/http/hook-call.ts over real sockets, on a fake clock: the answers that carry the scheduler's refusals,
 * the connections it closes, and answers sent in slices.
 */

async function listening (built: TestApp): Promise<number> {
  await built.app.listen({ port: 0, host: '127.0.0.1' })
  return (built.app.server.address() as { port: number }).port
}

/** Lets the server work, moving the fake clock on by a tick between turns of the event loop, until `done` holds. */
async function until (clock: FakeClock, done: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !done(); turns++) {
    if (turns === 2000) throw new Error(`${what}: not after ${turns} turns (${clock.time} ms of the fake clock)`)
    await turn()
    if (turns % 10 === 9) clock.advance(TICK_MS)
  }
}

const podSetSync = JSON.stringify(fixture('podset', 'first-sync'))

async function post (port: number, path: string, body: string): Promise<Response> {
  return await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
}

test('a body slower than HOOKS_BODY_TIMEOUT gets 408 with Connection: close while other calls are answered; the connection closes once the client has its answer', async (t) => {
  const clock = new FakeClock()
  const built = await build(t, { databaseUrl: false, controllers: [podSet], admissionClock: clock.clock })
  const port = await listening(built)
  const slow = [
    slowBody({ port, path: '/podset/sync', length: 'chunked', burst: 100 }),
    slowBody({ port, path: '/podset/sync', length: 1024 ** 2, burst: 100 })
  ]
  await clock.whenTicking()
  assert.equal((await post(port, '/podset/sync', podSetSync)).status, 200)
  let answered = 0
  for (const client of slow) void client.answered.then(() => { answered++ })
  await until(clock, () => answered === slow.length, 'the 408s')
  assert.ok(clock.time >= 3000, `answered at ${clock.time} ms`)
  for (const answer of await Promise.all(slow.map(async (client) => await client.answered))) {
    assert.equal(answer.status, 408, answer.text)
    assert.match(answer.text, /\r\nconnection: close\r\n/i)
    assert.doesNotMatch(answer.text, /keep-alive/i)
    assert.match(answer.text, /\r\n\r\n\{"error":"Request Timeout","message":"request body did not arrive within HOOKS_BODY_TIMEOUT \(3 s\)/)
  }
  // The client has read its answer and closes its side; the server closes its own, well before LINGER_MS.
  const started = performance.now()
  for (const client of slow) {
    client.close()
    await client.closed
  }
  assert.ok(performance.now() - started < LINGER_MS)
})

/** PodSet under another name, whose sync waits until `open` is called: a call that holds its turn to parse. */
function gatedPodSet (): { controller: CompositeController<any>, open: () => void } {
  let open = (): void => {}
  const gate = new Promise<void>((resolve) => { open = resolve })
  const controller: CompositeController<any> = { ...podSet, name: 'gated', hooks: { sync: async (request, context) => { await gate; return podSet.hooks.sync(request, context) } } }
  return { controller, open }
}

test('a call still waiting to be parsed HOOKS_ADMISSION_TIMEOUT after its arrival gets 503 with Retry-After, on a connection kept alive', async (t) => {
  const clock = new FakeClock()
  const { controller, open } = gatedPodSet()
  const built = await build(t, { databaseUrl: false, controllers: [controller], admissionClock: clock.clock, env: { HOOKS_BODY_LIMIT: '8Ki', HOOKS_ADMISSION_TIMEOUT: '2' } })
  const port = await listening(built)
  const large = JSON.stringify({ ...fixture('podset', 'first-sync'), padding: 'x'.repeat(5000) })
  const holding = post(port, '/gated/sync', large)
  await clock.whenTicking()
  const waiting = slowBody({ port, path: '/gated/sync', length: large.length, content: Buffer.from(large), burst: large.length })
  let answered = false
  void waiting.answered.then(() => { answered = true })
  await until(clock, () => answered, 'the 503')
  const answer = await waiting.answered
  assert.equal(answer.status, 503, answer.text)
  assert.match(answer.text, /\r\nretry-after: 1\r\n/i)
  assert.match(answer.text, /\r\nconnection: keep-alive\r\n/i)
  assert.match(answer.text, /"message":"no memory to parse the request body within HOOKS_ADMISSION_TIMEOUT \(2 s\) of its arrival: other bodies are being parsed; retry in 1 s \(Metacontroller retries by itself\)"/)
  assert.ok(clock.time >= 2000)
  open()
  assert.equal((await holding).status, 200)
  waiting.close()
})

test('an answer larger than a slice is sent whole, in slices, with its Content-Length', async (t) => {
  const built = await build(t, { databaseUrl: false, controllers: [podSet] })
  const request = syncRequest(podSetParent({ spec: { replicas: 1000, image: 'busybox:1.36', command: ['sleep', '3600'] } }), [])
  const response = await built.app.inject({ method: 'POST', url: '/podset/sync', payload: request })
  assert.equal(response.statusCode, 200)
  assert.ok(response.rawPayload.length > 4 * SLICE_BYTES, `${response.rawPayload.length} bytes`)
  assert.equal(response.headers['content-length'], String(response.rawPayload.length))
  assert.equal(response.headers['transfer-encoding'], undefined)
  assert.equal(response.json().children.length, 1000)
})
