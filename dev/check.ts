import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { Controller } from '../hooks/framework/controller.js'
import { CommandError, type CommandIo } from './command.js'

/**
 * npm run check -- [<controller>]
 * What a controller's author runs after each edit, in seconds where `npm test` takes minutes: the type check, the lint
 * of the controller's folder, and the tests that hold each registered controller to the contract (its generated
 * manifests are fresh, its fixtures get their golden answers without an update loop, its example is accepted and
 * renders, its fixtures observe every kind it owns), for that controller alone. Without a name: for every controller,
 * with every test that takes the registered controllers, which is what proves a scaffolded controller needs no test
 * edited.
 */

/** Test files with a test `<controller>: …` for each registered controller: what `check -- <controller>` runs. */
export const CONTRACT_TESTS = ['test/controllers.test.ts', 'test/dev/manifests.test.ts', 'test/manifests.test.ts', 'test/fuzz.test.ts', 'test/scripts/render.test.ts']

/** Every test file that takes the registered controllers, whatever they are: what `check` runs. */
export const REGISTRY_TESTS = [
  ...CONTRACT_TESTS,
  'test/conformance.test.ts', 'test/framework/custom-resource.test.ts', 'test/framework/parent.test.ts', 'test/framework/wire/schemas.test.ts',
  'test/http/etag.test.ts', 'test/http/request-body.test.ts', 'test/imports.test.ts', 'test/runtime/app.test.ts', 'test/runtime/probes.test.ts'
]

const require = createRequire(import.meta.url)
/** A package's command-line program, by its path in the package (their `exports` leave it out). */
const program = (name: string, path: string): string => join(dirname(require.resolve(`${name}/package.json`)), path)

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
 * `npm run check` in `root` over the registered `controllers`: one line per step on `io.stdout`, the output of those
 * that failed, and a CommandError saying what to run next when one did.
 */
export async function check (args: string[], controllers: readonly Controller[], root: string, io: CommandIo): Promise<void> {
  const [name, ...rest] = args
  if (rest.length > 0 || name?.startsWith('-') === true) throw new CommandError('usage: npm run check -- [<controller>]')
  if (name !== undefined && !controllers.some((controller) => controller.name === name)) {
    throw new CommandError(`no controller is named ${name}: the registered ones are ${controllers.map((c) => c.name).join(', ')}`)
  }
  const tsx = import.meta.resolve('tsx')
  const steps = await Promise.all([
    // Incremental: after the first run, only what changed since is checked again.
    step('types', root, [program('typescript', 'bin/tsc'), '--noEmit', '--incremental', '--tsBuildInfoFile', join('.cache', 'check.tsbuildinfo')]),
    step('lint', root, [program('eslint', 'bin/eslint.js'), name === undefined ? 'hooks' : join('hooks', name)]),
    name === undefined
      ? step('tests', root, ['--import', tsx, join('scripts', 'run-tests.ts'), ...REGISTRY_TESTS])
      // Its own tests need no database; NODE_TEST_CONTEXT would make this run a part of an enclosing one.
      : step('tests', root, ['--import', tsx, '--test', '--test-reporter=spec', `--test-name-pattern=^${name}: `, ...CONTRACT_TESTS], { NODE_TEST_CONTEXT: undefined })
  ])
  for (const { name: what, ok, output, seconds } of steps) {
    // node:test lists every test, then the failed ones again: those are what to read.
    if (!ok) io.stdout(`${output.slice(Math.max(0, output.indexOf('\u2716 failing tests:'))).trimEnd()}\n\n`)
    io.stdout(`${ok ? 'passed' : 'FAILED'}: ${what} (${seconds.toFixed(1)} s)\n`)
  }
  const failed = steps.filter((s) => !s.ok).map((s) => s.name)
  if (failed.length > 0) {
    throw new CommandError(`${failed.join(', ')} failed, above. A manifest that is stale: npm run generate. A fixture whose answer changed on purpose: UPDATE_GOLDEN=1 npm test -- test/controllers.test.ts, then read the diff.`)
  }
  io.stdout(`${name ?? 'every controller'}: types, lint and ${name === undefined ? 'the tests of the registry' : 'its contract tests'} pass; npm test runs the rest.\n`)
}
