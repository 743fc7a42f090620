import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'

const root = join(import.meta.dirname, '..', '..')

/** Runs `npm test`'s runner with no database configured and TMPDIR set, as a process of its own. */
function runTests (tmp: string): { status: number | null, output: string, pid: number } {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !['DATABASE_URL', 'NODE_TEST_CONTEXT'].includes(name)))
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/run-tests.ts', 'test/runtime/config.test.ts'], {
    cwd: root, env: { ...env, TMPDIR: tmp }, encoding: 'utf8', timeout: 60_000
  })
  return { status: run.status, output: run.stdout + run.stderr, pid: run.pid }
}

async function tempDir (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'run-tests-test-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

test('when the tests\' database cannot start (as root, in a temporary folder the postgres user cannot reach), the runner says why in one line, exits 1 and leaves no folder', {
  skip: process.getuid?.() !== 0 && 'only root runs PostgreSQL as another user'
}, async (t) => {
  const hidden = await tempDir(t) // 0700, as mktemp -d makes it
  const tmp = join(hidden, 'tmp')
  await mkdir(tmp, { mode: 0o755 })
  const run = runTests(tmp)
  assert.equal(run.status, 1, run.output)
  assert.equal(run.output.trim().split('\n').length, 1, run.output)
  assert.match(run.output.trim(), new RegExp(`^the tests' embedded PostgreSQL could not start: .*cannot enter ${hidden} \\(mode 0700, owner uid 0\\).*\\(or set DATABASE_URL to a database the tests may use\\)$`))
  assert.deepEqual((await readdir(tmp)).filter((entry) => entry.startsWith('hooks-test-pg-')), [])
  assert.equal(existsSync(join(root, '.cache', 'compiled', String(run.pid))), false, 'its compiled tests are removed')
})
