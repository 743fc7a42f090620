import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { chmod, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { developmentDataDir, freePort } from '../hooks/database/embedded.js'

/**
 * `npm start` without a database configured: the server's own embedded PostgreSQL, in real processes. Each test
 * runs the server in a checkout folder of its own, so each has its own development database.
 */

const root = join(import.meta.dirname, '..')
const tsx = import.meta.resolve('tsx')

/** The environment without any database setting, as on a fresh machine (and not marked as inside a test run). */
function withoutDatabase (): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !['DATABASE_URL', 'NODE_TEST_CONTEXT'].includes(name) && !/^(PSQL_|PG)/.test(name)))
}

/** A folder the server runs in as in a checkout; it and the server's development database are removed afterwards. */
async function checkout (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hooks-checkout-'))
  t.after(async () => {
    await rm(dir, { recursive: true, force: true })
    await rm(developmentDataDir(dir), { recursive: true, force: true })
  })
  return dir
}

interface Server {
  process: ChildProcess
  port: number
  output: () => string
  exited: Promise<number | null>
}

async function startServer (t: TestContext, cwd: string, env: NodeJS.ProcessEnv = {}, entry = join(root, 'hooks', 'server.ts')): Promise<Server> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', tsx, entry], {
    cwd,
    env: { ...withoutDatabase(), PORT: String(port), HOOKS_PROBE_PORT: String(await freePort()), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.after(() => { child.kill('SIGKILL') })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { resolve(code) }))
  return { process: child, port, output: () => output, exited }
}

async function waitForLog (server: Server, text: string, timeoutMs = 60_000): Promise<void> {
  for (let waited = 0; !server.output().includes(text); waited += 50) {
    if (waited > timeoutMs) throw new Error(`server never logged ${JSON.stringify(text)}:\n${server.output()}`)
    await sleep(50)
  }
}

function postmasterPid (cwd: string): number {
  return Number(readFileSync(join(developmentDataDir(cwd), 'postmaster.pid'), 'utf8').split('\n')[0])
}

async function readyz (server: Server): Promise<number> {
  return (await fetch(`http://127.0.0.1:${server.port}/readyz`)).status
}

async function databaseState (server: Server): Promise<string | undefined> {
  return ((await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as { database?: { status?: string } }).database?.status
}

// A server that never exits fails its test instead of hanging the run.
const timeout = 120_000

test('SIGTERM with the embedded database: the server keeps listening for HOOKS_SHUTDOWN_DELAY, logs "stopped", exits 0 and stops PostgreSQL', { timeout }, async (t) => {
  const cwd = await checkout(t)
  const server = await startServer(t, cwd, { HOOKS_SHUTDOWN_DELAY: '1' })
  await waitForLog(server, 'hook server ready')
  const started = performance.now()
  server.process.kill('SIGTERM')
  assert.equal(await server.exited, 0, server.output())
  const ms = performance.now() - started
  assert.ok(ms >= 1000, `exited ${Math.round(ms)} ms after SIGTERM, before the 1 s delay was over`)
  assert.match(server.output(), /"msg":"stopped"/)
  assert.equal(existsSync(join(developmentDataDir(cwd), 'postmaster.pid')), false, 'PostgreSQL was stopped with the server')
})

test('Ctrl-C after the embedded PostgreSQL was SIGKILLed: the server reports the loss and exits 0 within a few seconds', { timeout }, async (t) => {
  const cwd = await checkout(t)
  const server = await startServer(t, cwd)
  await waitForLog(server, 'hook server ready')
  process.kill(postmasterPid(cwd), 'SIGKILL')
  await waitForLog(server, 'the embedded PostgreSQL stopped (killed by SIGKILL)')
  assert.equal(await readyz(server), 200, 'still ready: only PostgresWriter needs the database, and it says so in its status')
  assert.equal(await databaseState(server), 'down')
  const started = performance.now()
  server.process.kill('SIGINT')
  assert.equal(await server.exited, 0, server.output())
  const ms = performance.now() - started
  assert.ok(ms < 5000, `exited ${Math.round(ms)} ms after SIGINT`)
  assert.match(server.output(), /"msg":"stopped"/)
})

test('a second server in the same checkout names the first one\'s pid, exits 1, and leaves the first one\'s PostgreSQL running', { timeout }, async (t) => {
  const cwd = await checkout(t)
  const first = await startServer(t, cwd)
  await waitForLog(first, 'hook server ready')

  const second = await startServer(t, cwd)
  assert.equal(await second.exited, 1, second.output())
  const lines = second.output().trim().split('\n')
  assert.equal(lines.length, 1, second.output())
  assert.match(lines[0] ?? '', new RegExp(`belongs to the hook server with pid ${first.process.pid}, which is still running`))
  assert.equal(await readyz(first), 200, 'the first server and its PostgreSQL still answer')
})

test('an embedded PostgreSQL that cannot start stops the server with one line and exit code 1', { timeout }, async (t) => {
  const cwd = await checkout(t)
  const dataDir = developmentDataDir(cwd)
  await mkdir(dataDir, { recursive: true })
  await writeFile(join(dataDir, 'PG_VERSION'), '9.6\n')
  const server = await startServer(t, cwd)
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

  const server = await startServer(t, copy, {}, join(copy, 'hooks', 'server.ts'))
  await waitForLog(server, 'hook server ready')
  assert.equal(await readyz(server), 200)
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
  const runner = spawnSync(process.execPath, ['--import', tsx, 'scripts/run-tests.ts', 'probe.test.ts'], { cwd: copy, env: withoutDatabase(), encoding: 'utf8', timeout: 100_000 })
  assert.equal(runner.status, 0, runner.stdout + runner.stderr)
  assert.match(runner.stdout, /tests use an embedded PostgreSQL/)
  assert.match(runner.stdout, /pass 1/)
})
