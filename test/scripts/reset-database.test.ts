import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { developmentDataDir } from '../../dev/embedded-postgres.js'
import { checkout, startDevelopmentServer } from '../helpers/development-server.js'
import { fixturePath } from '../helpers/fixtures.js'

/** `npm run db:reset` (scripts/reset-database.ts), run in a checkout folder of the test's own. */

const script = join(import.meta.dirname, '..', '..', 'scripts', 'reset-database.ts')
const tsx = import.meta.resolve('tsx')

function reset (cwd: string, args = ['--yes']): { status: number | null, output: string } {
  const run = spawnSync(process.execPath, ['--import', tsx, script, ...args], { cwd, encoding: 'utf8', timeout: 60_000 })
  return { status: run.status, output: run.stdout + run.stderr }
}

/** db:reset on a terminal (script(1) gives it one), with `typed` typed at it. */
function resetOnTerminal (cwd: string, typed: string): { status: number | null, output: string } {
  const command = [process.execPath, '--import', tsx, script].map((word) => `'${word}'`).join(' ')
  const run = spawnSync('script', ['-qec', command, '/dev/null'], { cwd, input: typed, encoding: 'utf8', timeout: 60_000 })
  return { status: run.status, output: run.stdout.replaceAll('\r', '') + run.stderr }
}

test('db:reset says what it deletes and asks; without a terminal it never asks, and deletes only given --yes', { timeout: 120_000 }, async (t) => {
  const cwd = await checkout(t)
  const dataDir = developmentDataDir(cwd)
  await mkdir(dataDir, { recursive: true })
  await writeFile(join(dataDir, 'PG_VERSION'), '17\n')

  assert.deepEqual(reset(cwd, []), {
    status: 1,
    output: `db:reset would delete the development database in ${dataDir}, every table and row in it; with no terminal to ask on, it deletes only when given --yes (npm run db:reset -- --yes)\n`
  })
  assert.ok(existsSync(join(dataDir, 'PG_VERSION')))

  const declined = resetOnTerminal(cwd, 'n\n')
  assert.equal(declined.status, 1, declined.output)
  assert.match(declined.output, new RegExp(`This deletes the development database in ${dataDir}, every table and row in it\\. Delete it\\? \\[y/N\\] .*nothing deleted`, 's'))
  assert.ok(existsSync(join(dataDir, 'PG_VERSION')))

  const confirmed = resetOnTerminal(cwd, 'y\n')
  assert.equal(confirmed.status, 0, confirmed.output)
  assert.match(confirmed.output, new RegExp(`removed the development database in ${dataDir}`))
  assert.equal(existsSync(dataDir), false)
})

test('db:reset refuses while npm start runs on the database, removes it once stopped, and the next start begins empty', { timeout: 120_000 }, async (t) => {
  const cwd = await checkout(t)
  const dataDir = developmentDataDir(cwd)
  assert.deepEqual(reset(cwd), { status: 0, output: `no development database in ${dataDir}: nothing to remove\n` })

  const first = startDevelopmentServer(t, cwd)
  await first.logged('hook server ready')
  const sync = async (url: string): Promise<string> => {
    const response = await fetch(`${url}/postgres-writer/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await readFile(fixturePath('postgres-writer', 'sync-create')) })
    return (await response.json() as { status: { conditions: Array<{ reason: string }> } }).status.conditions[0]?.reason ?? ''
  }
  const finalize = await fetch(`${first.url}/postgres-writer/finalize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await readFile(fixturePath('postgres-writer', 'finalize')) })
  assert.equal(finalize.status, 200)
  assert.equal(await sync(first.url), 'RowDeleted', 'a sync after the finalize of the same uid writes nothing')

  const refused = reset(cwd)
  assert.equal(refused.status, 1, refused.output)
  assert.equal(refused.output, `the database in ${dataDir} is in use by the hook server with pid ${first.pid}: stop that server (Ctrl-C where it runs), then run this again\n`)
  assert.ok(existsSync(join(dataDir, 'PG_VERSION')))

  assert.equal(await first.stop(), 0, first.output())
  assert.deepEqual(reset(cwd), { status: 0, output: `removed the development database in ${dataDir}: the next npm start creates an empty one\n` })
  assert.equal(existsSync(dataDir), false)

  const second = startDevelopmentServer(t, cwd)
  await second.logged('hook server ready')
  assert.equal(await sync(second.url), 'RowWritten', 'the finalize was forgotten with the database')
})
