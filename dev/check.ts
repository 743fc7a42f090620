import { spawn } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import type { Controller } from '../hooks/framework/controller.js'
import { compileTree } from './compiled-tree.js'
import { CommandError, packageProgram as program, parseCommand, type CommandIo } from './command.js'

/**
 * npm run check -- [<controller>...]
 * What a controller's author runs after each edit, what `npm test` would say of the controllers named (or of every
 * one) in a fraction of its time: the type check, the lint of each controller's folder, and every test that holds a
 * registered controller to the contract, named `<controller>: …` (its generated manifests are fresh, its fixtures get
 * their golden answers without an update loop and observe every kind it owns, each answer is a v2 answer, its example
 * is accepted and renders, a refused parent is refused, ETags, request bodies, hostile input, and its answer bounds).
 */

/** Every test file that holds each registered controller to the contract in tests named `<controller>: …`. */
export const CONTRACT_TESTS = ['test/controllers.test.ts', 'test/dev/manifests.test.ts', 'test/manifests.test.ts', 'test/scripts/render.test.ts', 'test/framework/wire/schemas.test.ts', 'test/framework/parent.test.ts', 'test/http/etag.test.ts', 'test/http/request-body.test.ts', 'test/fuzz.test.ts', 'test/answer-bounds.test.ts']

/** The type check's arguments and lint's, shared with `npm test`: each run looks again only at what changed since. */
export const TYPE_CHECK = ['--noEmit', '--incremental', '--tsBuildInfoFile', join('.cache', 'check.tsbuildinfo')]
export const LINT = ['--cache', '--cache-location', join('.cache', 'eslint')]

interface Step { name: string, ok: boolean, output: string, seconds: number }

/** Runs a program in `root`; its output together, and whether it exited 0. */
async function step (name: string, root: string, args: string[], env: Record<string, string | undefined> = {}): Promise<Step> {
  const started = performance.now()
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  return { name, ok: code === 0, output, seconds: (performance.now() - started) / 1000 }
}

/**
 * `npm run check` in `root` over the registered `controllers`: one line per step on `io.stdout`, the failed tests of
 * a step that failed, and a CommandError saying what to run next when one did.
 */
export async function check (argv: string[], controllers: readonly Controller[], root: string, io: CommandIo): Promise<void> {
  const { positionals: args } = parseCommand(argv, {
    usage: `usage: npm run check -- [<controller>...]
  The type check, the lint of each controller's folder, and the tests that hold each controller to the contract, for
  the controllers named or for every one: ${controllers.map((c) => c.name).join(', ')}.`,
    options: {},
    positionals: [0, controllers.length]
  })
  const unknown = args.filter((name) => !controllers.some((controller) => controller.name === name))
  if (unknown.length > 0) throw new CommandError(`no controller is named ${unknown.join(' or ')}: the registered ones are ${controllers.map((c) => c.name).join(', ')}`)
  const checked = controllers.filter((controller) => args.length === 0 || args.includes(controller.name))
  const pattern = `--test-name-pattern=^(${checked.map((controller) => controller.name).join('|')}): `
  // NODE_TEST_CONTEXT would make these tests a part of an enclosing run.
  const testEnv = { NODE_TEST_CONTEXT: undefined }
  const lint = step('lint', root, [program('eslint', 'bin/eslint.js'), ...LINT, ...args.length === 0 ? ['hooks'] : args.map((name) => join('hooks', name))])
  const types = step('types', root, [program('typescript', 'bin/tsc'), ...TYPE_CHECK])
  let tests: Promise<Step>
  if (checked.some((controller) => controller.needs.length > 0)) {
    // Only PostgresWriter's tests need a database: the test runner starts one for them when DATABASE_URL is not set.
    tests = step('tests', root, ['--import', import.meta.resolve('tsx'), join('scripts', 'run-tests.ts'), pattern, ...CONTRACT_TESTS], testEnv)
  } else {
    // Compiled once, as npm test runs them: a TypeScript loader in each test file's process would cost a second of CPU.
    const tree = await compileTree(root).catch((error: Error) => error)
    tests = tree instanceof Error
      ? Promise.resolve({ name: 'tests', ok: false, output: `the tests could not be compiled: ${tree.message}`, seconds: 0 })
      : step('tests', root, ['--enable-source-maps', '--test', '--test-reporter=spec', `--test-concurrency=${availableParallelism() + 1}`, pattern, ...CONTRACT_TESTS.map(tree.compiled)], testEnv)
        .finally(() => { tree.remove() })
  }
  const steps = await Promise.all([types, lint, tests])
  for (const { name: what, ok, output, seconds } of steps) {
    // node:test lists every test, then the failed ones again: those are what to read.
    if (!ok) io.stdout(`${output.slice(Math.max(0, output.indexOf('\u2716 failing tests:'))).trimEnd()}\n\n`)
    io.stdout(`${ok ? 'passed' : 'FAILED'}: ${what} (${seconds.toFixed(1)} s)\n`)
  }
  const failed = steps.filter((s) => !s.ok).map((s) => s.name)
  if (failed.length > 0) {
    throw new CommandError(`${failed.join(', ')} failed, above. A manifest that is stale: npm run generate. A fixture whose answer changed on purpose: UPDATE_GOLDEN=1 npm test -- test/controllers.test.ts, then read the diff.`)
  }
  io.stdout(`${checked.map((controller) => controller.name).join(', ')}: types, lint and every contract test pass.\n`)
}
