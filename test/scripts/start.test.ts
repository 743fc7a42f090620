import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { chmod, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import pg from 'pg'
import { developmentDataDir, readPostmasterFile, type PostmasterFile } from '../../dev/embedded-postgres.js'
import { checkout, startDevelopmentServer } from '../helpers/development-server.js'
import { waitForReadiness, withoutDatabase } from '../../dev/server-process.js'

/**
 * `npm start` (scripts/start.ts) without a database configured: its embedded PostgreSQL, in real processes. Each test
 * runs the server in a checkout folder of its own, so each has its own development database; the steps that leave it
 * running share one.
 */

const root = join(import.meta.dirname, '..', '..')
const tsx = import.meta.resolve('tsx')

/** The postmaster of the development database of the server running in `cwd`. */
function postmaster (cwd: string): PostmasterFile {
  const file = readPostmasterFile(developmentDataDir(cwd))
  assert.ok(file !== undefined, `no postmaster.pid in ${developmentDataDir(cwd)}`)
  return file
}

// A server that never exits fails its test instead of hanging the run.
const timeout = 120_000

/** The IPv4 addresses that listen on `port` (/proc/net/tcp: hex address, hex port, state 0A for LISTEN). */
function listeningOn (port: number): string[] {
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).map((line) => line.trim().split(/\s+/)).filter((fields) => fields[3] === '0A' && fields[1]?.endsWith(`:${port.toString(16).toUpperCase().padStart(4, '0')}`))
    .map((fields) => (fields[1]?.slice(0, 8).match(/../g) ?? []).reverse().map((byte) => parseInt(byte, 16)).join('.'))
}

test('npm start with no database: its own PostgreSQL, durable, not shared with a second server, and stopped with it', { timeout }, async (t) => {
  const cwd = await checkout(t)
  const server = startDevelopmentServer(t, cwd, { HOOKS_SHUTDOWN_DELAY: '1', HOST: undefined })
  await server.logged('hook server ready')

  await t.test('with no HOST, both ports listen on 127.0.0.1 only: a developer\'s machine does not serve its network', { skip: process.platform !== 'linux' && 'reads /proc/net/tcp' }, () => {
    for (const port of [server.port, Number(new URL(server.probeUrl).port)]) assert.deepEqual(listeningOn(port), ['127.0.0.1'], `port ${port}`)
  })

  await t.test('the development database is durable: it flushes the WAL at every commit, as a database whose data is kept must', async () => {
    const client = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${postmaster(cwd).port}/postgres` })
    await client.connect()
    const { rows } = await client.query('SHOW fsync')
    await client.end()
    assert.deepEqual(rows, [{ fsync: 'on' }])
  })

  await t.test('a second server in the same checkout names the first one\'s pid, exits 1, and leaves the first one\'s PostgreSQL running', async () => {
    const second = startDevelopmentServer(t, cwd)
    assert.equal(await second.exited, 1, second.output())
    const lines = second.output().trim().split('\n')
    assert.equal(lines.length, 1, second.output())
    assert.match(lines[0] ?? '', new RegExp(`belongs to the hook server with pid ${server.pid}, which is still running`))
    // The first server still answers, and so does its PostgreSQL.
    await waitForReadiness(server, 200, 10_000, 'up')
  })

  await t.test('SIGTERM: the server keeps listening for HOOKS_SHUTDOWN_DELAY, logs "stopped", exits 0 and stops PostgreSQL', async () => {
    const started = performance.now()
    server.process.kill('SIGTERM')
    assert.equal(await server.exited, 0, server.output())
    const ms = performance.now() - started
    assert.ok(ms >= 1000, `exited ${Math.round(ms)} ms after SIGTERM, before the 1 s delay was over`)
    assert.match(server.output(), /"msg":"stopped"/)
    assert.equal(existsSync(join(developmentDataDir(cwd), 'postmaster.pid')), false, 'PostgreSQL was stopped with the server')
  })
})

test('Ctrl-C after the embedded PostgreSQL was SIGKILLed: the server reports the loss and exits 0 within a few seconds', { timeout }, async (t) => {
  const cwd = await checkout(t)
  // /readyz checks the database again after a second, not five.
  const server = startDevelopmentServer(t, cwd, { HOOKS_DATABASE_CHECK_INTERVAL: '1' })
  await server.logged('hook server ready')
  process.kill(postmaster(cwd).pid, 'SIGKILL')
  await server.logged('the embedded PostgreSQL stopped (killed by SIGKILL)')
  // Still ready: only PostgresWriter needs the database, and it says so in its status.
  await waitForReadiness(server, 200, 10_000, 'down')
  const started = performance.now()
  server.process.kill('SIGINT')
  assert.equal(await server.exited, 0, server.output())
  const ms = performance.now() - started
  assert.ok(ms < 5000, `exited ${Math.round(ms)} ms after SIGINT`)
  assert.match(server.output(), /"msg":"stopped"/)
})

test('an embedded PostgreSQL that cannot start stops the server with one line and exit code 1', { timeout }, async (t) => {
  const cwd = await checkout(t)
  const dataDir = developmentDataDir(cwd)
  await mkdir(dataDir, { recursive: true })
  await writeFile(join(dataDir, 'PG_VERSION'), '9.6\n')
  const server = startDevelopmentServer(t, cwd)
  assert.equal(await server.exited, 1, server.output())
  const lines = server.output().trim().split('\n')
  assert.equal(lines.length, 1, server.output())
  assert.match(lines[0] ?? '', /the embedded development PostgreSQL could not start: PostgreSQL stopped while starting \(exit code \d+\): \S.*set DATABASE_URL/)
})

test('a checkout in a folder only root may enter: the server reaches ready and the test runner starts its database', {
  timeout,
  skip: process.getuid?.() !== 0 && 'only root runs PostgreSQL as another user, who may not enter the folder'
}, async (t) => {
  const outer = await mkdtemp(join(tmpdir(), 'hooks-root-only-'))
  await chmod(outer, 0o700)
  const copy = join(outer, 'clone')
  t.after(async () => {
    await rm(outer, { recursive: true, force: true })
    await rm(developmentDataDir(copy), { recursive: true, force: true })
  })
  // What a clone holds: the files git tracks, plus the new ones it does not ignore, as they are now.
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter((file) => file !== '' && existsSync(join(root, file)))
  for (const file of files) await cp(join(root, file), join(copy, file))
  // Hard links: the binaries then sit under the root-only folder too, as in a clone (a symlink would point out of it).
  const linked = spawnSync('cp', ['-al', join(root, 'node_modules'), join(copy, 'node_modules')])
  if (linked.status !== 0) await cp(join(root, 'node_modules'), join(copy, 'node_modules'), { recursive: true, verbatimSymlinks: true })

  const server = startDevelopmentServer(t, copy, {}, join(copy, 'scripts', 'start.ts'))
  await server.logged('hook server ready')
  await waitForReadiness(server, 200, 10_000, 'up')
  server.process.kill('SIGTERM')
  assert.equal(await server.exited, 0, server.output())

  await writeFile(join(copy, 'probe.test.ts'), `
    import { test } from 'node:test'
    import pg from 'pg'
    test('the runner\\'s database answers', async () => {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL })
      await client.connect()
      await client.query('SELECT 1')
      await client.end()
    })
  `)
  const runner = spawnSync(process.execPath, ['--import', tsx, 'scripts/run-tests.ts', 'probe.test.ts'], { cwd: copy, env: { ...process.env, ...withoutDatabase() }, encoding: 'utf8', timeout: 100_000 })
  assert.equal(runner.status, 0, runner.stdout + runner.stderr)
  assert.match(runner.stdout, /tests use an embedded PostgreSQL/)
  assert.match(runner.stdout, /pass 1/)
})
