import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { CompositeController } from '../../hooks/framework/controller.js'
import { podSet } from '../../hooks/podset/index.js'
import { build, type LogLine, type TestApp } from '../helpers/app.js'
import { fixture, fixturePath } from '../helpers/fixtures.js'
import { startServer } from '../../dev/server-process.js'
import { slowBody } from '../helpers/slow-body.js'

/** hooks/http/hook-telemetry.ts: one log line and one metric per hook call, a client that went away included. */

const ERROR = 50

async function listening (built: TestApp): Promise<number> {
  await built.app.listen({ port: 0, host: '127.0.0.1' })
  return (built.app.server.address() as { port: number }).port
}

/** The lines that match, once there are `count` of them or two seconds have passed. */
async function loggedSoon (built: TestApp, count: number, matches: (line: LogLine) => boolean): Promise<LogLine[]> {
  for (const deadline = Date.now() + 2000; built.logs().filter(matches).length < count && Date.now() < deadline;) await sleep(20)
  return built.logs().filter(matches)
}

async function abortedCount (built: TestApp, controller: string): Promise<string | undefined> {
  const metrics = (await built.app.inject({ url: '/metrics' })).body
  return new RegExp(`metacontroller_hooks_duration_seconds_count\\{controller="${controller}",hook="sync",outcome="aborted"\\} (\\d+)`).exec(metrics)?.[1]
}

test('a client that goes away mid-body is one info line saying so, and counted as aborted; no error, no stack', async (t) => {
  const built = await build(t, { databaseUrl: false, controllers: [podSet], logs: true })
  const port = await listening(built)
  // Each client goes away once the server has its request (on a busy machine, 100 ms after sending may be before).
  const requests = { seen: 0 }
  built.app.server.on('request', () => { requests.seen++ })
  for (const [index, length] of (['chunked', 1000] as const).entries()) {
    const client = slowBody({ port, path: '/podset/sync', length, burst: 100 })
    for (let polls = 0; requests.seen <= index && polls < 500; polls++) await sleep(10)
    await sleep(100)
    client.close()
  }
  const aborted = await loggedSoon(built, 2, (line) => line.msg === 'podset sync aborted: the client closed the connection while its body was arriving')
  assert.equal(aborted.length, 2, JSON.stringify(built.logs()))
  for (const line of aborted) {
    assert.equal(line.level, 30)
    assert.equal(line.outcome, 'aborted')
    assert.equal(line.bytesReceived, 100)
  }
  assert.deepEqual(built.logs().filter((line) => line.level >= ERROR), [])
  assert.equal(await abortedCount(built, 'podset'), '2')
})

test('a client that goes away while its body waits to be parsed is one info line saying so, and counted as aborted', async (t) => {
  let open = (): void => {}
  const gate = new Promise<void>((resolve) => { open = resolve })
  const gated: CompositeController<any> = { ...podSet, name: 'gated', hooks: { sync: async (request, context) => { await gate; return podSet.hooks.sync(request, context) } } }
  const built = await build(t, { databaseUrl: false, controllers: [gated], logs: true, env: { HOOKS_BODY_LIMIT: '8Ki' } })
  const port = await listening(built)
  const body = JSON.stringify({ ...fixture('podset', 'first-sync'), padding: 'x'.repeat(5000) })
  const holding = fetch(`http://127.0.0.1:${port}/gated/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  await sleep(100)
  const waiting = slowBody({ port, path: '/gated/sync', length: body.length, burst: body.length })
  await sleep(100)
  waiting.close()
  const aborted = await loggedSoon(built, 1, (line) => line.msg === 'gated sync aborted: the client closed the connection while it waited for memory to parse its body')
  open()
  assert.equal((await holding).status, 200)
  assert.equal(aborted.length, 1, JSON.stringify(built.logs()))
  assert.equal(aborted[0]?.level, 30)
  assert.deepEqual(built.logs().filter((line) => line.level >= ERROR), [])
  assert.equal(await abortedCount(built, 'gated'), '1')
})

test('the log line of a not_ready answer carries the Ready condition\'s reason and message', async (t) => {
  const server = await startServer({ env: { DATABASE_URL: 'postgres://hooks:pw-Lq7-never-log@127.0.0.1:1/hooks', PG_CONNECT_TIMEOUT: '1' } })
  t.after(async () => { await server.stop() })
  for (const [controller, name] of [['postgres-writer', 'sync-create'], ['podset', 'first-sync']]) {
    const response = await fetch(`${server.url}/${controller}/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await readFile(fixturePath(controller as string, name as string)) })
    assert.equal(response.status, 200)
    await server.logged(`"${controller} sync not_ready"`, 10_000)
  }
  const lines = server.output().split('\n').filter((line) => line.includes('sync not_ready')).map((line) => JSON.parse(line) as Record<string, unknown>)
  assert.deepEqual(lines.map(({ controller, outcome, reason }) => ({ controller, outcome, reason })), [
    { controller: 'postgres-writer', outcome: 'not_ready', reason: 'DatabaseUnavailable' },
    { controller: 'podset', outcome: 'not_ready', reason: 'PodsUnavailable' }
  ])
  assert.match(String(lines[0]?.message), /ECONNREFUSED|connect/, 'what the database said')
  assert.doesNotMatch(server.output(), /pw-Lq7-never-log/)
})

/** The value of one sample of /metrics, or undefined when it has none. */
function sample (metrics: string, name: string, labels: string): number | undefined {
  const line = metrics.split('\n').find((text) => text.startsWith(`${name}{${labels}} `))
  return line === undefined ? undefined : Number(line.split(' ').at(-1))
}

test('an answer is counted by its Ready status and reason, a refusal (422, 400, 408) by its status code', async (t) => {
  const built = await build(t, { databaseUrl: false, controllers: [podSet], env: { HOOKS_BODY_TIMEOUT: '0.2' }, logs: true })
  const send = async (body: string): Promise<number> =>
    (await built.app.inject({ method: 'POST', url: '/podset/sync', headers: { 'content-type': 'application/json' }, payload: body })).statusCode
  const invalid = fixture('podset', 'invalid-spec')
  assert.equal(await send(JSON.stringify(invalid)), 200)
  assert.equal(await send(JSON.stringify(invalid)), 200)
  // A child without its last-applied configuration cannot be kept as it is: 422.
  const unkept = structuredClone(invalid)
  delete Object.values<any>(unkept.children['Pod.v1'])[0].metadata.annotations
  assert.equal(await send(JSON.stringify(unkept)), 422)
  assert.equal(await send(''), 400)
  const port = await listening(built)
  const slow = slowBody({ port, path: '/podset/sync', length: 1000, burst: 10 })
  assert.equal((await slow.answered).status, 408)
  // A 408 cut a body short: the server closes the connection once the client has closed its side, and only then is
  // the call logged and counted.
  slow.close()
  assert.equal((await loggedSoon(built, 1, (line) => line.msg === 'podset sync rejected' && line.statusCode === 408)).length, 1)

  const metrics = (await built.app.inject({ url: '/metrics' })).body
  assert.equal(sample(metrics, 'metacontroller_hooks_answers_total', 'controller="podset",hook="sync",ready="False",reason="InvalidSpec"'), 2)
  for (const code of ['422', '400', '408']) {
    assert.equal(sample(metrics, 'metacontroller_hooks_refusals_total', `controller="podset",hook="sync",code="${code}"`), 1, code)
  }
  assert.equal(sample(metrics, 'metacontroller_hooks_refusals_total', 'controller="podset",hook="sync",code="200"'), undefined)
})

test('a refused hook call is one line, the call\'s own, with the refusal as its reason; a request to no hook is one line too', async (t) => {
  const built = await build(t, { databaseUrl: false, controllers: [podSet], logs: true, env: { HOOKS_BODY_LIMIT: '64Ki' } })
  const unnamed = fixture('podset', 'first-sync')
  delete unnamed.parent.metadata.name
  const calls: Array<[string, { method: 'POST' | 'GET', url: string, payload?: object }, number]> = [
    ['a parent without a name', { method: 'POST', url: '/podset/sync', payload: unnamed }, 422],
    ['a body that is no hook request', { method: 'POST', url: '/podset/sync', payload: { parent: 1 } }, 400],
    ['a body over HOOKS_BODY_LIMIT', { method: 'POST', url: '/podset/sync', payload: { padding: 'x'.repeat(70_000) } }, 413],
    ['a path that is no hook', { method: 'GET', url: '/nothing' }, 404]
  ]
  for (const [what, call, statusCode] of calls) {
    const before = built.logs().length
    const response = await built.app.inject(call)
    assert.equal(response.statusCode, statusCode, what)
    const lines = built.logs().slice(before)
    assert.equal(lines.length, 1, `${what}: ${JSON.stringify(lines)}`)
    assert.equal(lines[0]?.statusCode, statusCode, what)
    assert.equal(lines[0]?.reason, response.json().message, what)
  }
  assert.deepEqual(built.logs().map((line) => line.msg), ['podset sync rejected', 'podset sync rejected', 'podset sync rejected', 'request refused'])
  assert.equal(built.logs()[0]?.parent, undefined, 'a parent without a name is named by none')
})
