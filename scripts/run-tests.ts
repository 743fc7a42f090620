import { spawn } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { commandArguments, NODE_TEST_OPTIONS, NODE_TEST_USAGE, nodeTestFlags } from '../dev/command.js'
import { compileTree } from '../dev/compiled-tree.js'
import { startPostgres } from '../dev/postgres-process.js'

/**
 * Runs node:test over the given test files or folders (default: every test/**\/*.test.ts outside test/e2e,
 * test/faults, test/image, test/rules and test/scaffold, which have commands of their own) against a real PostgreSQL: DATABASE_URL
 * when set, otherwise an embedded one started here and removed afterwards. When it cannot start, one line says why
 * and the exit code is 1. Its flags are node:test's own (`--test-name-pattern=…`). The tests run
 * compiled to JavaScript (dev/compiled-tree.ts), with source maps.
 */

function testFiles (dir: string, skip: string[]): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return skip.includes(path) ? [] : testFiles(path, skip)
    return path.endsWith('.test.ts') ? [path] : []
  }).sort()
}

const SKIPPED = ['e2e', 'faults', 'image', 'rules', 'scaffold']
const { values, positionals: args } = commandArguments({
  usage: `usage: ${process.env.npm_lifecycle_event === undefined ? 'tsx scripts/run-tests.ts' : `npm run ${process.env.npm_lifecycle_event}`} -- [<test file or folder>...] [--test-name-pattern=<pattern>]...
  Runs the tests given (default: test/**/*.test.ts outside ${SKIPPED.map((suite) => `test/${suite}`).join(', ')}) against
  DATABASE_URL, or a PostgreSQL started here and removed afterwards.
${NODE_TEST_USAGE}`,
  options: NODE_TEST_OPTIONS,
  positionals: [0, Infinity]
})
const flags = nodeTestFlags(values)
const files = args.length > 0
  ? args.flatMap((path) => statSync(path).isDirectory() ? testFiles(path, []) : [path])
  : testFiles('test', SKIPPED.map((suite) => join('test', suite)))

const repository = join(import.meta.dirname, '..')
const inRepository = files.map((file) => relative(repository, resolve(file)))
const tree = await compileTree(repository, inRepository).catch((error: Error) => {
  process.stderr.write(`the tests could not be compiled: ${error.message}\n`)
  process.exit(1)
})

let databaseUrl = process.env.DATABASE_URL
let stopDatabase = async (): Promise<void> => {}
if (databaseUrl === undefined || databaseUrl === '') {
  try {
    const postgres = await startPostgres()
    process.stdout.write(`tests use an embedded PostgreSQL at ${postgres.description}\n`)
    databaseUrl = postgres.connectionString
    stopDatabase = postgres.remove
  } catch (error) {
    process.stderr.write(`the tests' embedded PostgreSQL could not start: ${(error as Error).message} (or set DATABASE_URL to a database the tests may use)\n`)
    tree.remove()
    process.exit(1)
  }
}

// One test file more at once than there are CPUs, where node:test runs one fewer: part of a test's time is spent
// waiting for the servers and databases it starts (npm test took 211 s with three at once on 2 CPUs, 230 with two).
const concurrency = values['test-concurrency'] !== undefined ? [] : [`--test-concurrency=${availableParallelism() + 1}`]
const child = spawn(process.execPath, ['--enable-source-maps', '--test', '--test-reporter=spec', ...concurrency, ...flags, ...inRepository.map(tree.compiled)], {
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: databaseUrl }
})
// Stopped from outside, the tests stop first; their database is removed once they have.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { child.kill(signal) })
const code = await new Promise<number>((resolve) => child.on('exit', (exitCode, signal) => { resolve(exitCode ?? (signal === null ? 1 : 128)) }))
tree.remove()
await stopDatabase()
process.exit(code)
