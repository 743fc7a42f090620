import { commandArguments } from '../dev/command.js'
import { developmentDataDir, EmbeddedPostgresError, removeDatabase } from '../dev/embedded-postgres.js'

/**
 * `npm run db:reset`: removes `npm start`'s development database, so that the next `npm start` begins with an empty
 * one. It refuses while a hook server of this checkout runs on it. A database set with DATABASE_URL, PSQL_* or PG* is not touched:
 * this is only the one `npm start` starts when none is set.
 */

const dataDir = developmentDataDir()
commandArguments({
  usage: `usage: npm run db:reset
  Deletes the development database that npm start keeps in ${dataDir}, every table and row in it, so that the next
  npm start begins with an empty one. A database set with DATABASE_URL, PSQL_* or PG* is never touched.`,
  options: {}
})

try {
  const removed = await removeDatabase(dataDir, (line) => { process.stdout.write(`${line}\n`) })
  process.stdout.write(removed
    ? `removed the development database in ${dataDir}: the next npm start creates an empty one\n`
    : `no development database in ${dataDir}: nothing to remove\n`)
} catch (error) {
  process.stderr.write(`${error instanceof EmbeddedPostgresError ? error.message : String(error)}\n`)
  process.exit(1)
}
