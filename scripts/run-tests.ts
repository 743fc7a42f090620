import { spawn } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startPostgres } from '../test/helpers/postgres-process.js'

/**
 * Runs node:test over the given test files or folders (default: every test/**\/*.test.ts outside test/e2e and
 * test/faults) against a
 * real PostgreSQL: DATABASE_URL when set, otherwise an embedded one started here and removed afterwards.
 */

function testFiles (dir: string, skip: string[]): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return skip.includes(path) ? [] : testFiles(path, skip)
    return path.endsWith('.test.ts') ? [path] : []
  }).sort()
}

const args = process.argv.slice(2)
const files = args.length > 0
  ? args.flatMap((path) => statSync(path).isDirectory() ? testFiles(path, []) : [path])
  : testFiles('test', [join('test', 'e2e'), join('test', 'faults')])

let databaseUrl = process.env.DATABASE_URL
let stopDatabase = async (): Promise<void> => {}
if (databaseUrl === undefined || databaseUrl === '') {
  const postgres = await startPostgres()
  process.stdout.write(`tests use an embedded PostgreSQL at ${postgres.description}\n`)
  databaseUrl = postgres.connectionString
  stopDatabase = postgres.remove
}

const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: databaseUrl }
})
const code = await new Promise<number>((resolve) => child.on('exit', (exitCode, signal) => { resolve(exitCode ?? (signal === null ? 1 : 128)) }))
await stopDatabase()
process.exit(code)
