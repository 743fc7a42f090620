import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { EmbeddedPostgresError, startEmbeddedPostgres } from '../../dev/embedded-postgres.js'

/** A data directory of the test's own, removed afterwards. */
async function dataDirectory (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'embedded-test-pg-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

/** Whether a process runs; a zombie (exited, not yet reaped by its new parent) does not. */
function alive (pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

async function answers (connectionString: string): Promise<boolean> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 2000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

test('a throw-away PostgreSQL answers in UTF-8 without flushing its commits, and stopping it leaves neither its process nor its folder', async (t) => {
  const dataDir = await dataDirectory(t)
  const postgres = await startEmbeddedPostgres({ dataDir, persistent: false })
  const pid = postgres.pid()
  assert.ok(pid !== undefined && alive(pid))
  const client = new pg.Client({ connectionString: postgres.connectionString })
  await client.connect()
  assert.equal((await client.query('SHOW server_encoding')).rows[0].server_encoding, 'UTF8')
  assert.equal((await client.query('SHOW fsync')).rows[0].fsync, 'off')
  await client.end()
  await postgres.stop()
  assert.equal(alive(pid), false)
  assert.equal(postgres.pid(), undefined)
  assert.equal(existsSync(dataDir), false)
})

test('a durable PostgreSQL flushes the WAL at every commit, as production ones do', async (t) => {
  const postgres = await startEmbeddedPostgres({ dataDir: await dataDirectory(t), persistent: false, durable: true })
  t.after(async () => { await postgres.stop() })
  const client = new pg.Client({ connectionString: postgres.connectionString })
  await client.connect()
  const settings = await client.query("SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit') ORDER BY name")
  await client.end()
  assert.deepEqual(settings.rows, [{ name: 'fsync', setting: 'on' }, { name: 'synchronous_commit', setting: 'on' }])
})

test('a start that fails throws one line saying why, and leaves no process and no throw-away folder', async (t) => {
  const dataDir = await dataDirectory(t)
  const error = await startEmbeddedPostgres({ dataDir, persistent: false, port: 70000 }).then(() => undefined, (e: unknown) => e)
  assert.ok(error instanceof EmbeddedPostgresError, String(error))
  assert.match(error.message, /^PostgreSQL stopped while starting \(exit code \d+\): .*70000.*port/)
  assert.doesNotMatch(error.message, /\n/)
  assert.equal(existsSync(dataDir), false)
})

test('a data directory PostgreSQL cannot use is reported in one line and left as it is', async (t) => {
  const dataDir = await dataDirectory(t)
  await writeFile(join(dataDir, 'PG_VERSION'), '9.6\n')
  const error = await startEmbeddedPostgres({ dataDir, persistent: true }).then(() => undefined, (e: unknown) => e)
  assert.ok(error instanceof EmbeddedPostgresError, String(error))
  assert.match(error.message, /^PostgreSQL stopped while starting \(exit code \d+\): \S/)
  assert.doesNotMatch(error.message, /\n/)
  assert.equal(await readFile(join(dataDir, 'PG_VERSION'), 'utf8'), '9.6\n')
})

test('a PostgreSQL whose owner still runs is reported with the owner\'s pid and keeps running', async (t) => {
  const dataDir = await dataDirectory(t)
  const first = await startEmbeddedPostgres({ dataDir, persistent: true })
  t.after(async () => { await first.stop() })
  // Even a throw-away start, which removes its folder when it fails, leaves a folder in use alone.
  const error = await startEmbeddedPostgres({ dataDir, persistent: false }).then(() => undefined, (e: unknown) => e)
  assert.ok(error instanceof EmbeddedPostgresError, String(error))
  assert.match(error.message, new RegExp(`belongs to the hook server with pid ${process.pid}, which is still running`))
  assert.match(error.message, new RegExp(`DATABASE_URL=postgres://postgres:postgres@127\\.0\\.0\\.1:${first.port}/postgres`))
  assert.ok(existsSync(join(dataDir, 'PG_VERSION')), 'its data is still there')
  assert.ok(await answers(first.connectionString), 'the first PostgreSQL still answers')
})

test('a PostgreSQL left running by a process that was SIGKILLed is stopped, and the next start takes the directory over', async (t) => {
  const dataDir = await dataDirectory(t)
  // A process of its own starts PostgreSQL, says so, and is then SIGKILLed: its PostgreSQL keeps running.
  const owner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
    import { startEmbeddedPostgres } from ${JSON.stringify(join(import.meta.dirname, '..', '..', 'dev', 'embedded-postgres.ts'))}
    const postgres = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, persistent: true })
    process.stdout.write('pid ' + postgres.pid() + ' port ' + postgres.port + '\\n')
    setInterval(() => {}, 1000)
  `], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.after(() => { owner.kill('SIGKILL') })
  const [leftover, port] = await new Promise<[number, number]>((resolve, reject) => {
    owner.stdout.on('data', (chunk: Buffer) => {
      const [, pid, on] = /pid (\d+) port (\d+)/.exec(chunk.toString()) ?? []
      resolve([Number(pid), Number(on)])
    })
    owner.once('exit', (code) => { reject(new Error(`the owner process exited with ${code}`)) })
  })
  owner.kill('SIGKILL')
  await new Promise((resolve) => owner.once('exit', resolve))
  assert.ok(alive(leftover), 'PostgreSQL outlives the SIGKILLed process that started it')

  const lines: string[] = []
  const next = await startEmbeddedPostgres({ dataDir, port, persistent: true, onLog: (line) => { lines.push(line) } })
  t.after(async () => { await next.stop() })
  assert.equal(alive(leftover), false)
  assert.ok(lines.some((line) => line.includes(`stopping PostgreSQL (pid ${leftover}) left running`)), lines.join('\n'))
  assert.notEqual(next.pid(), leftover)
  assert.ok(await answers(next.connectionString))
})
