import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { LogLines } from '../../hooks/runtime/log-lines.js'

/** A file to log to, and what it holds so far. */
function logFile (t: TestContext): { fd: number, text: () => string } {
  const folder = mkdtempSync(join(tmpdir(), 'log-lines-'))
  const path = join(folder, 'out.log')
  const fd = openSync(path, 'w')
  t.after(() => {
    closeSync(fd)
    rmSync(folder, { recursive: true, force: true })
  })
  return { fd, text: () => readFileSync(path, 'utf8') }
}

test('lines written within the delay reach the file together, in order, once it has passed', async (t) => {
  const file = logFile(t)
  const lines = new LogLines(file.fd, 30)
  lines.write('{"msg":"one"}\n')
  lines.write('{"msg":"two"}\n')
  assert.equal(file.text(), '')
  await sleep(120)
  assert.equal(file.text(), '{"msg":"one"}\n{"msg":"two"}\n')
})

test('a batch with no room for the next line at its longest is written before it', (t) => {
  const file = logFile(t)
  // 20 characters take at most 60 bytes: the second line may not fit in 64 beside the first.
  const lines = new LogLines(file.fd, 60_000, 64)
  const first = `${'a'.repeat(19)}\n`
  const second = `${'b'.repeat(19)}\n`
  lines.write(first)
  assert.equal(file.text(), '')
  lines.write(second)
  assert.equal(file.text(), first)
  lines.flush()
  assert.equal(file.text(), first + second)
})

test('a line longer than the batch is written alone, after the lines before it', (t) => {
  const file = logFile(t)
  const lines = new LogLines(file.fd, 60_000, 64)
  const long = `${'x'.repeat(100)}\n`
  lines.write('short\n')
  lines.write(long)
  assert.equal(file.text(), `short\n${long}`)
  lines.write('after\n')
  lines.flush()
  assert.equal(file.text(), `short\n${long}after\n`)
})

test('lines of any characters are written whole, however the batch fills', (t) => {
  const file = logFile(t)
  // The second line's 4 characters fit in the 6 bytes left of 16 after the first, its 10 bytes do not.
  const lines = new LogLines(file.fd, 60_000, 16)
  const written = ['日本語\n', '日本語\n', '🙂🙂\n', 'é\n', 'plain\n', 'ünïcödé\n', '日本語日本語\n', '🙂\n']
  for (const line of written) lines.write(line)
  lines.flush()
  assert.equal(file.text(), written.join(''))
})

test('lines still waiting are written when the process exits', () => {
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
    import { LogLines } from ${JSON.stringify(join(import.meta.dirname, '..', '..', 'hooks', 'runtime', 'log-lines.ts'))}
    const lines = new LogLines(1, 60_000)
    lines.write('first\\n')
    lines.write('last\\n')
    process.exit(3)
  `], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(run.status, 3, run.stderr)
  assert.equal(run.stdout, 'first\nlast\n')
})
