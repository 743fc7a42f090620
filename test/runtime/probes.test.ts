import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { controllers } from '../../hooks/controllers.js'
import { DATABASE_CHECK_WAIT_MS } from '../../hooks/runtime/probes.js'
import { build } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { fixturePath } from '../helpers/fixtures.js'
import { startPostgres } from '../../dev/postgres-process.js'
import { startServer } from '../../dev/server-process.js'

type App = Awaited<ReturnType<typeof build>>['app']

async function readiness (app: App): Promise<{ statusCode: number, body: any, ms: number }> {
  const started = performance.now()
  const response = await app.inject({ url: '/readyz' })
  return { statusCode: response.statusCode, body: response.json(), ms: performance.now() - started }
}

async function databaseUp (app: App): Promise<string | undefined> {
  return /^metacontroller_hooks_database_up (\d)$/m.exec((await app.inject({ url: '/metrics' })).body)?.[1]
}

/** Polls /readyz until it reports the database `status`; every answer on the way must be a 200. */
async function untilDatabase (app: App, status: 'up' | 'down'): Promise<{ statusCode: number, body: any, ms: number }> {
  const deadline = Date.now() + 15_000
  for (;;) {
    const answer = await readiness(app)
    assert.equal(answer.statusCode, 200, JSON.stringify(answer.body))
    if (answer.body.database.status === status || Date.now() > deadline) return answer
    await sleep(100)
  }
}

test('/readyz is 503 only while draining; /healthz is 200 throughout', async (t) => {
  const { app, lifecycle } = await build(t)
  assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
  const ready = await untilDatabase(app, 'up')
  assert.deepEqual([ready.statusCode, ready.body.status, ready.body.database.status], [200, 'ready', 'up'])
  lifecycle.draining = true
  const draining = await readiness(app)
  assert.deepEqual([draining.statusCode, draining.body.status], [503, 'draining'])
  assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
})

test('PostgreSQL stopped: /readyz stays 200 and reports the database down, metacontroller_hooks_database_up 0; back: up, 1', async (t) => {
  const postgres = await startPostgres()
  t.after(async () => { await postgres.remove() })
  const { app } = await build(t, { databaseUrl: postgres.connectionString, env: { HOOKS_DATABASE_CHECK_INTERVAL: '1', PG_CONNECT_TIMEOUT: '2' } })
  assert.equal((await untilDatabase(app, 'up')).body.database.status, 'up')
  assert.equal(await databaseUp(app), '1')

  await postgres.stop()
  const down = await untilDatabase(app, 'down')
  assert.equal(down.body.status, 'ready', 'the hooks can still be served: PostgresWriter answers DatabaseUnavailable itself')
  assert.equal(down.body.database.status, 'down')
  assert.match(down.body.database.message, /ECONNREFUSED|connect/)
  assert.doesNotMatch(JSON.stringify(down.body), /postgres:postgres@/, 'no credentials')
  await sleep(1000)
  assert.equal(await databaseUp(app), '0')

  await postgres.restart()
  assert.equal((await untilDatabase(app, 'up')).body.database.status, 'up')
  await sleep(1000)
  assert.equal(await databaseUp(app), '1')
})

const CONNECT_TIMEOUT_MS = 20_000
assert.ok(DATABASE_CHECK_WAIT_MS < CONNECT_TIMEOUT_MS / 10)

test('a database that accepts connections and never answers: /readyz answers at once, /metrics without waiting for it', async (t) => {
  const silent: Socket[] = []
  const server = createServer((socket) => { silent.push(socket) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const socket of silent) socket.destroy()
    server.close()
  })
  const { port } = server.address() as { port: number }
  const { app } = await build(t, { databaseUrl: `postgres://nobody:secret@127.0.0.1:${port}/none`, env: { PG_CONNECT_TIMEOUT: String(CONNECT_TIMEOUT_MS / 1000) } })
  // Bounds far from both sides, so that a busy machine cannot make them flake: /readyz waits for no timer, /metrics
  // for the check about DATABASE_CHECK_WAIT_MS, and the check itself would take the whole connect timeout.
  const first = await readiness(app)
  assert.deepEqual([first.statusCode, first.body.database], [200, { status: 'unknown' }])
  assert.ok(first.ms < DATABASE_CHECK_WAIT_MS, `/readyz answered in ${Math.round(first.ms)} ms: it waited for the database check`)
  const started = performance.now()
  assert.equal(await databaseUp(app), '0', 'not known to be up')
  assert.ok(performance.now() - started < CONNECT_TIMEOUT_MS / 2, '/metrics did not wait for the database either')
  assert.ok(silent.length <= 1, `one check at a time (${silent.length} connections)`)
})

test('a server of composites alone reports no database and has no database metric', async (t) => {
  const { app } = await build(t, { controllers: controllers.filter((controller) => controller.type === 'composite') })
  const ready = await readiness(app)
  assert.deepEqual([ready.statusCode, ready.body], [200, { status: 'ready' }])
  assert.equal(await databaseUp(app), undefined)
})

test('the probe port answers anything but GET /healthz, /readyz and /metrics with one line saying the hooks are on PORT', async (t) => {
  const server = await startServer({ env: { DATABASE_URL: testDatabaseUrl() } })
  t.after(async () => { await server.stop() })
  const probeUrl = server.probeUrl as string
  const probePort = new URL(probeUrl).port
  // Larger than the probe port's body limit: a hook request sent to the wrong port is told so, not that it is too large.
  const hookRequest = readFileSync(fixturePath('podset', 'scale-down'))
  const asked = async (method: string, path: string, body?: Buffer): Promise<Response> =>
    await fetch(`${probeUrl}${path}`, { method, ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }) })
  for (const [method, path, body] of [['POST', '/podset/sync', hookRequest], ['GET', '/postgres-writer/finalize'], ['GET', '/']] as const) {
    const response = await asked(method, path, body)
    assert.equal(response.status, 404, `${method} ${path}`)
    assert.deepEqual(await response.json(), {
      error: 'Not Found',
      message: `no ${method} ${path} on the probe port (HOOKS_PROBE_PORT, ${probePort}), which serves GET /healthz, /readyz and /metrics only: the hooks are served on PORT (${server.port})`
    })
  }
  const posted = await asked('POST', '/healthz', hookRequest)
  assert.equal(posted.status, 405)
  assert.equal(posted.headers.get('allow'), 'GET, HEAD')
  assert.deepEqual(await posted.json(), { error: 'Method Not Allowed', message: '/healthz answers GET (and HEAD) only, not POST' })
  assert.equal((await asked('GET', '/healthz')).status, 200)
})
