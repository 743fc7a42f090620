import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { createServer, type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { deployment } from '../../dev/deployment.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { fixturePath } from '../helpers/fixtures.js'
import { spawnServer, startServer, withoutDatabase } from '../../dev/server-process.js'
import { EVENT_LOOP_SAMPLE_MS } from '../../hooks/http/metrics.js'

test('SIGTERM: in-flight hooks complete, then the process exits 0', async (t) => {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: testDatabaseUrl() })
  await admin.connect()
  t.after(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {})
    await admin.end()
  })
  await admin.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.students (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, country text NOT NULL)`)

  const server = await startServer({ env: { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: schema, PG_STATEMENT_TIMEOUT: '15' } })
  t.after(async () => { await server.stop() })

  // Hold the table so that the hook is still running when SIGTERM arrives.
  await admin.query(`BEGIN; LOCK TABLE ${schema}.students IN ACCESS EXCLUSIVE MODE`)
  const inFlight = fetch(`${server.url}/postgres-writer/sync`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: await readFile(fixturePath('postgres-writer', 'sync-create'))
  })
  await sleep(500)
  server.process.kill('SIGTERM')
  await server.logged('shutting down', 20_000)
  await sleep(300)
  await admin.query('COMMIT')

  const response = await inFlight
  assert.equal(response.status, 200)
  const body = await response.json() as any
  assert.equal(body.status.conditions[0].status, 'True')
  assert.equal(await server.exited, 0, server.output())
  const rows = await admin.query(`SELECT name FROM ${schema}.students`)
  assert.deepEqual(rows.rows, [{ name: 'alex' }])
})

test('a bad configuration value stops start-up with exit code 1 and a message naming the variable', async () => {
  const server = spawnServer({ env: { PORT: 'eighty', HOOKS_BODY_LIMIT: 'huge', DATABASE_URL: 'postgres://user:hunter2@127.0.0.1:1/db' } })
  assert.equal(await server.exited, 1)
  assert.match(server.output(), /PORT='eighty': expected a whole number/)
  assert.match(server.output(), /HOOKS_BODY_LIMIT='huge'/)
  assert.doesNotMatch(server.output(), /hunter2/)
})

test('a HOOKS_BODY_LIMIT the Deployment\'s memory cannot hold stops start-up: one line says the most it can, and the exit code is 1', async () => {
  const server = spawnServer({ nodeArgs: deployment().nodeArgs, env: { HOOKS_BODY_LIMIT: '64Mi', DATABASE_URL: 'postgres://user@127.0.0.1:1/db' } })
  // A server that starts anyway is stopped, and fails the test.
  const started = setTimeout(() => { void server.stop() }, 30_000)
  assert.equal(await server.exited, 1, server.output())
  clearTimeout(started)
  const lines = server.output().trim().split('\n')
  assert.equal(lines.length, 1, server.output())
  assert.match(lines[0] ?? '', /HOOKS_BODY_LIMIT=67108864 bytes is more than this server can hold: .* set HOOKS_BODY_LIMIT to at most \d+Mi, or raise the memory limit and --max-old-space-size with it/)
})

test('the production entry point without a database setting starts none: one line names the variables to set, and the exit code is 1', async () => {
  const server = spawnServer({ env: withoutDatabase() })
  assert.equal(await server.exited, 1, server.output())
  const lines = server.output().trim().split('\n')
  assert.equal(lines.length, 1, server.output())
  assert.match(lines[0] ?? '', /"msg":"no database configured: set DATABASE_URL, .*PG\* variables \(this server starts no database of its own; npm start does, for development\)"/)
})

test('an idle server sleeps: its event loop wakes a few times a second at most', async (t) => {
  const server = await startServer({ nodeArgs: deployment().nodeArgs, env: { DATABASE_URL: testDatabaseUrl() } })
  t.after(async () => { await server.stop() })
  assert.equal((await fetch(`${server.probeUrl ?? server.url}/metrics`)).status, 200)
  await sleep(500)
  const before = wakeUps(server.pid)
  await sleep(2000)
  const perSecond = (wakeUps(server.pid) - before) / 2
  // The event loop's delay is sampled every EVENT_LOOP_SAMPLE_MS, which wakes it; nothing else should.
  assert.ok(perSecond <= 2 * 1000 / EVENT_LOOP_SAMPLE_MS, `the idle server's main thread woke ${perSecond} times a second`)
})

/** How many times the process's main thread has gone to sleep and been woken. */
function wakeUps (pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status)?.[1])
}

for (const variable of ['PORT', 'HOOKS_PROBE_PORT'] as const) {
  test(`a port in use (${variable}): one line names the port and its variable, and the exit code is 1`, async (t) => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    t.after(() => { taken.close() })
    const port = (taken.address() as AddressInfo).port
    const ports = variable === 'PORT' ? { port, probePort: 0 } : { port: 0, probePort: port }
    const server = spawnServer({ ...ports, env: { DATABASE_URL: testDatabaseUrl() } })
    assert.equal(await server.exited, 1, server.output())
    // Before it, at most fastify's "Server listening" for the hook port, when the probe port is the one taken.
    const lines = server.output().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    assert.deepEqual(lines.filter((line) => Number(line.level) >= 40), lines.slice(-1), server.output())
    assert.equal(lines.at(-1)?.msg, `cannot listen on 127.0.0.1 port ${port} (${variable}): another process is listening there; stop it, or set ${variable} to a free port`)
    assert.ok(lines.every((line) => line.err === undefined), 'no stack')
  })
}

test('a wrong database password is logged once at start-up, with the reason and without the password; the server still starts', async (t) => {
  const password = 'Wrong-pw-Kq17'
  const url = new URL(testDatabaseUrl())
  url.password = password
  const server = await startServer({ env: { DATABASE_URL: url.href, HOOKS_DATABASE_CHECK_INTERVAL: '1' } })
  t.after(async () => { await server.stop() })
  await server.logged('database unreachable', 10_000)
  // Asked again after the check interval, the database is still down: no second line.
  for (let i = 0; i < 2; i++) {
    await sleep(1100)
    assert.equal((await fetch(`${server.probeUrl ?? server.url}/readyz`)).status, 200)
  }
  const failures = server.output().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => String(line.msg).startsWith('database unreachable'))
  assert.equal(failures.length, 1, server.output())
  assert.match(String(failures[0]?.reason), /password authentication failed for user/)
  assert.doesNotMatch(server.output(), new RegExp(password))
})

test('logs and answers never contain the database password or the bearer token', async (t) => {
  const password = 'pw-Zx81-never-log'
  const token = 'tok-Qq42-never-log'
  const server = await startServer({
    env: {
      LOG_LEVEL: 'trace',
      DATABASE_URL: `postgres://hooks:${password}@127.0.0.1:1/hooks`,
      PG_CONNECT_TIMEOUT: '1',
      HOOKS_BEARER_TOKEN: token
    }
  })
  t.after(async () => { await server.stop() })
  const body = await readFile(fixturePath('postgres-writer', 'sync-create'))
  const answers: string[] = []
  for (const authorization of [`Bearer ${token}`, 'Bearer wrong', `Bearer ${token}x`]) {
    for (const hook of ['sync', 'finalize']) {
      const response = await fetch(`${server.url}/postgres-writer/${hook}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body })
      answers.push(await response.text())
    }
  }
  answers.push(await (await fetch(`${server.url}/readyz`)).text())
  answers.push(await (await fetch(`${server.url}/metrics`)).text())
  assert.match(answers[0] ?? '', /DatabaseUnavailable/, 'the database really was called and failed')
  assert.equal(await server.stop(), 0)
  for (const text of [server.output(), ...answers]) {
    assert.doesNotMatch(text, new RegExp(password))
    assert.doesNotMatch(text, new RegExp(token))
  }
})
