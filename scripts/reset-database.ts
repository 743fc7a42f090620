import { existsSync } from 'node:fs'
import { createInterface } from 'node:readline/promises'
import { commandArguments } from '../dev/command.js'
import { developmentDataDir, EmbeddedPostgresError, removeDatabase } from '../dev/embedded-postgres.js'

/**
 * `npm run db:reset`: removes `npm start`'s development database, so that the next `npm start` begins with an empty
 * one. It says what it deletes and asks first, unless given --yes; without a terminal to ask on, it refuses. It refuses
 * while a hook server of this checkout runs on it. A database set with DATABASE_URL, PSQL_* or PG* is not touched:
 * this is only the one `npm start` starts when none is set.
 */

const dataDir = developmentDataDir()
const { values } = commandArguments({
  usage: `usage: npm run db:reset [-- --yes]
  Deletes the development database that npm start keeps in ${dataDir}, every table and row in it, so that the next
  npm start begins with an empty one. Asks first, unless given --yes. A database set with DATABASE_URL, PSQL_* or PG*
  is never touched.`,
  options: { yes: { type: 'boolean', short: 'y' } }
})

const what = `the development database in ${dataDir}, every table and row in it`
if (existsSync(dataDir) && values.yes !== true) {
  if (process.stdin.isTTY !== true) {
    process.stderr.write(`db:reset would delete ${what}; with no terminal to ask on, it deletes only when given --yes (npm run db:reset -- --yes)\n`)
    process.exit(1)
  }
  const prompt = createInterface({ input: process.stdin, output: process.stdout })
  const answer = await prompt.question(`This deletes ${what}. Delete it? [y/N] `)
  prompt.close()
  if (!/^y(es)?$/i.test(answer.trim())) {
    process.stdout.write('nothing deleted\n')
    process.exit(1)
  }
}

try {
  const removed = await removeDatabase(dataDir, (line) => { process.stdout.write(`${line}\n`) })
  process.stdout.write(removed
    ? `removed the development database in ${dataDir}: the next npm start creates an empty one\n`
    : `no development database in ${dataDir}: nothing to remove\n`)
} catch (error) {
  process.stderr.write(`${error instanceof EmbeddedPostgresError ? error.message : String(error)}\n`)
  process.exit(1)
}
