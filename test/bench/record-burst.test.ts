import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'

/** `npm run bench:record` (test/e2e/record-burst.ts): what it does without a rig, which is to say nothing. */

const script = join(import.meta.dirname, '..', 'e2e', 'record-burst.ts')
const tsx = import.meta.resolve('tsx')

function record (...args: string[]): { status: number | null, stdout: string, stderr: string } {
  const run = spawnSync(process.execPath, ['--import', tsx, script, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, E2E_BIN_DIR: '/nonexistent' } })
  return { status: run.status, stdout: run.stdout, stderr: run.stderr }
}

test('--help prints the usage and starts nothing; an unknown flag or a bad count is refused in one line', () => {
  const help = record('--help')
  assert.equal(help.status, 0, help.stderr)
  assert.match(help.stdout, /^usage: npm run bench:record -- \[--objects <n>\] \[--delete <n>\] \[--out <file>\] \[--metacontroller-version <v>\]\n/)
  assert.equal(help.stderr, '')
  assert.deepEqual(record('--bogus'), { status: 2, stdout: '', stderr: 'unknown flag --bogus: it knows --objects <value>, --delete <value>, --out <value>, --metacontroller-version <value>, --help/-h\n' })
  assert.deepEqual(record('--objects', '10', '--delete', '11'), { status: 1, stdout: '', stderr: '--delete 11: at most the 10 objects applied\n' })
  assert.deepEqual(record('--objects', 'many'), { status: 1, stdout: '', stderr: '--objects many: give a whole number of objects, 1 or more\n' })
})
