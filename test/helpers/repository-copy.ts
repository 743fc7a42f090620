import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { TestContext } from 'node:test'

/** A throwaway copy of the repository, for tests of the scripts that write into it. */

const root = join(import.meta.dirname, '..', '..')

/** The repository as it is (tracked and new files), sharing node_modules, as a git checkout; removed after the test. */
export async function repositoryCopy (t: TestContext): Promise<string> {
  const copy = await mkdtemp(join(tmpdir(), 'hooks-copy-'))
  t.after(async () => { await rm(copy, { recursive: true, force: true }) })
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  for (const file of listed.split('\0').filter((path) => path !== '' && existsSync(join(root, path)))) {
    await mkdir(dirname(join(copy, file)), { recursive: true })
    await copyFile(join(root, file), join(copy, file))
  }
  await symlink(join(root, 'node_modules'), join(copy, 'node_modules'))
  // A clone is a git checkout, and some tests copy theirs with git.
  execFileSync('git', ['init', '-q'], { cwd: copy })
  execFileSync('git', ['add', '-A'], { cwd: copy })
  return copy
}

/**
 * Runs a command in `cwd` as a person would: without the variables of the test runner and of the coverage tool
 * around the test; DATABASE_URL stays, which `npm test` uses instead of starting a database of its own.
 */
export async function runIn (cwd: string, command: string, args: string[], options: { env?: Record<string, string | undefined>, timeoutMs?: number } = {}): Promise<{ status: number | null, stdout: string, stderr: string }> {
  const { NODE_TEST_CONTEXT: _context, UPDATE_GOLDEN: _update, ...inherited } = process.env
  // Node gives a child its own NODE_V8_COVERAGE unless the child's environment names one: without this, the copy's
  // processes wrote into this run's coverage, and the copy's c8 emptied it first.
  const child = spawn(command, args, { cwd, env: { ...inherited, NODE_V8_COVERAGE: '', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: options.timeoutMs })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve))
  return { status, stdout, stderr }
}

/** runIn, failing with the command's output unless it exits 0; its standard output. */
export async function succeedIn (cwd: string, command: string, args: string[], options: Parameters<typeof runIn>[3] = {}): Promise<string> {
  const result = await runIn(cwd, command, args, options)
  assert.equal(result.status, 0, `${command} ${args.join(' ')} failed:\n${result.stdout.slice(-20_000)}\n${result.stderr.slice(-5_000)}`)
  return result.stdout
}
