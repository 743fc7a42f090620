import { spawn, execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { commandArguments } from '../dev/command.js'
import { startPostgres } from '../dev/postgres-process.js'

/**
 * Tests the contract of hooks/database/pg-internals.ts (what this server takes from pg beyond its documentation)
 * against the newest pg 8.x the npm registry serves, or the version given as the argument, installed into a temporary
 * copy of that module and its test; `npm test` tests it against the pinned one. Against DATABASE_URL when set,
 * otherwise an embedded PostgreSQL started here. Exit code 1, with a line naming the version, when the contract breaks.
 */

const { positionals: [wanted] } = commandArguments({
  usage: `usage: npm run test:newest-pg [-- <pg version>]
  Tests the contract of hooks/database/pg-internals.ts against the newest pg 8.x on the npm registry, or the version
  given, installed into a temporary copy; against DATABASE_URL or a PostgreSQL started here.`,
  options: {},
  positionals: [0, 1]
})
const root = join(import.meta.dirname, '..')
const files = ['hooks/database/pg-internals.ts', 'test/database/pg-internals.test.ts', 'test/helpers/database-url.ts']

const npm = (args: string[], cwd = root): string => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim()

const pinned = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies.pg
const versions = JSON.parse(npm(['view', `pg@${wanted ?? '8'}`, 'version', '--json'])) as string | string[]
const version = [versions].flat().at(-1)
if (version === undefined) throw new Error(`the registry has no pg ${wanted ?? '8.x'}`)
const which = wanted === undefined ? `pg ${version}, the newest 8.x (package.json pins ${pinned})` : `pg ${version} (package.json pins ${pinned})`

const copy = mkdtempSync(join(tmpdir(), 'hooks-pg-contract-'))
let stopDatabase = async (): Promise<void> => {}
try {
  writeFileSync(join(copy, 'package.json'), JSON.stringify({ private: true, type: 'module', dependencies: { pg: version } }))
  npm(['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', '--loglevel=error'], copy)
  const installed = (JSON.parse(readFileSync(join(copy, 'node_modules', 'pg', 'package.json'), 'utf8')) as { version: string }).version
  if (installed !== version) throw new Error(`npm installed pg ${installed}, not ${version}`)
  for (const file of files) cpSync(join(root, file), join(copy, file), { recursive: true })

  let databaseUrl = process.env.DATABASE_URL ?? ''
  if (databaseUrl === '') {
    const postgres = await startPostgres()
    databaseUrl = postgres.connectionString
    stopDatabase = postgres.remove
  }
  process.stdout.write(`testing the contract of hooks/database/pg-internals.ts against ${which}\n`)
  const test = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), '--test', '--test-reporter=spec', join(copy, files[1] as string)], {
    cwd: dirname(join(copy, files[1] as string)),
    stdio: 'inherit',
    env: { ...process.env, DATABASE_URL: databaseUrl }
  })
  const code = await new Promise<number | null>((resolve) => test.on('exit', resolve))
  if (code !== 0) {
    process.stderr.write(`${which} breaks the contract of hooks/database/pg-internals.ts: the failing checks above say what changed; keep pg at ${pinned} until that module is adapted\n`)
    process.exitCode = 1
  } else {
    process.stdout.write(`${which} keeps the contract of hooks/database/pg-internals.ts\n`)
  }
} finally {
  await stopDatabase()
  rmSync(copy, { recursive: true, force: true })
}
