import { spawn } from 'node:child_process'
import { LINT, TYPE_CHECK } from '../dev/check.js'
import { commandArguments, NODE_TEST_OPTIONS, NODE_TEST_USAGE, packageProgram } from '../dev/command.js'

/**
 * `npm test [-- <test files or folders>]`: lint, the type check, and the tests under coverage (scripts/run-tests.ts),
 * all at once: the tests spend much of their time waiting for the servers and databases they start, time that lint
 * and the type check use. The tests' output streams; lint's and the type check's follow once they are done. Any of the
 * three failing fails the run. Both remember what they found (in .cache/): run again, they look only at what changed
 * since, 20 s of CPU each the first time and a few the next.
 */

commandArguments({
  usage: `usage: npm test -- [<test file or folder>...] [--test-name-pattern=<pattern>]...
  Lint, the type check, and the tests under coverage: those given, or every test/**/*.test.ts outside the suites of
  their own (test:e2e, test:faults, test:image, test:rules, test:scaffold), on DATABASE_URL or a PostgreSQL of their own.
${NODE_TEST_USAGE}`,
  options: NODE_TEST_OPTIONS,
  positionals: [0, Infinity]
})

interface Run { name: string, code: Promise<number | null>, output: () => string }

function run (name: string, args: string[], stream = false): Run {
  const child = spawn(process.execPath, args, { stdio: ['ignore', stream ? 'inherit' : 'pipe', stream ? 'inherit' : 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { child.kill(signal) })
  return { name, code: new Promise((resolve) => child.once('close', resolve)), output: () => output }
}

const runs = [
  run('tests', [packageProgram('c8', 'bin/c8.js'), process.execPath, '--import', 'tsx', 'scripts/run-tests.ts', ...process.argv.slice(2)], true),
  run('lint', [packageProgram('eslint', 'bin/eslint.js'), ...LINT, '.']),
  run('type check', [packageProgram('typescript', 'bin/tsc'), ...TYPE_CHECK])
]
const codes = await Promise.all(runs.map(async ({ code }) => await code))
for (const [index, { name, output }] of runs.entries()) {
  if (output() !== '') process.stdout.write(`\n${output()}`)
  process.stdout.write(`${codes[index] === 0 ? 'passed' : 'FAILED'}: ${name}\n`)
}
process.exit(codes.every((code) => code === 0) ? 0 : 1)
