import type { FastifyBaseLogger } from 'fastify'
import { connectionFromUrl } from '../hooks/database/connection.js'
import { serve, SET_A_DATABASE, StartupError, type OwnDatabase } from '../hooks/runtime/serve.js'
import { commandArguments } from '../dev/command.js'
import { developmentDataDir, EmbeddedPostgresError, startEmbeddedPostgres } from '../dev/embedded-postgres.js'

/**
 * `npm start`: the hook server as in production, except that with no database configured it starts a development
 * PostgreSQL of its own (dev/embedded-postgres.ts), keeps its data between runs, and stops it on shutdown.
 */

async function developmentDatabase (log: FastifyBaseLogger): Promise<OwnDatabase> {
  let embedded
  try {
    embedded = await startEmbeddedPostgres({
      dataDir: developmentDataDir(),
      persistent: true,
      durable: true,
      onLog: (line) => { log.debug({ postgres: line }) },
      onExit: (how) => { log.error(`the embedded PostgreSQL stopped (${how}): hooks answer DatabaseUnavailable until this server is restarted`) }
    })
  } catch (error) {
    if (error instanceof EmbeddedPostgresError && !error.installed) throw new StartupError(`no database configured: ${SET_A_DATABASE} (${error.message}, so no development database can be started)`)
    throw new StartupError(`the embedded development PostgreSQL could not start: ${(error as Error).message} (to use another database, ${SET_A_DATABASE})`)
  }
  log.info({ database: embedded.description, dataDir: embedded.dataDir }, `no database configured: started an embedded PostgreSQL at ${embedded.description} (password "postgres", data in ${embedded.dataDir})`)
  return { connection: connectionFromUrl(embedded.connectionString, 'embedded'), stop: embedded.stop }
}

commandArguments({
  usage: `usage: npm start [-- --version]
  The hook server on PORT (8080) and its probes on HOOKS_PROBE_PORT (8081), configured from the environment
  (README.md#configuration). With no database configured, it starts a development PostgreSQL of its own, keeps its
  data between runs (npm run db:reset removes it), and stops it on exit. Ctrl-C stops it.
  Its data: ${developmentDataDir()}`,
  options: {},
  version: true
})

await serve({ startDatabase: developmentDatabase })
