import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import { probeApp, probeServerOptions } from './app.js'
import { build } from './build.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { controllers } from '../controllers.js'
import type { Connection } from '../database/connection.js'

/** Start-up: configuration, the app (build.ts), listen, graceful shutdown; for the production entry point and for `npm start`. */

/** What stops start-up, in one line that says what to do. */
export class StartupError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'StartupError'
  }
}

export const SET_A_DATABASE = 'set DATABASE_URL, the PSQL_HOST/PSQL_PORT/PSQL_DBNAME/PSQL_USER/PSQL_PASSWORD variables, or libpq\'s PG* variables'

/** A database the server started for itself, stopped after the pool is closed. */
export interface OwnDatabase {
  connection: Connection
  stop: () => Promise<void>
}

export interface ServeOptions {
  /**
   * Called when no database is configured and a controller needs one. Without it (the production entry point), that
   * is a start-up error.
   */
  startDatabase?: (log: FastifyBaseLogger) => Promise<OwnDatabase>
}

function fail (message: string): never {
  process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), msg: message })}\n`)
  process.exit(1)
}

export async function serve (options: ServeOptions = {}): Promise<void> {
  let config: Config
  try {
    config = loadConfig()
  } catch (error) {
    fail(error instanceof ConfigError ? error.message : String(error))
  }

  let own: OwnDatabase | undefined
  const database = config.database.connection ?? (async (log: FastifyBaseLogger) => {
    if (options.startDatabase === undefined) fail(`no database configured: ${SET_A_DATABASE} (this server starts no database of its own; npm start does, for development)`)
    try {
      own = await options.startDatabase(log)
    } catch (error) {
      fail(error instanceof StartupError ? error.message : String(error))
    }
    return own.connection
  })
  const { app: fastify, postgres, probes, lifecycle } = await build({ config, database })
  const probeServer = Fastify(probeServerOptions(fastify.log))
  await probeServer.register(probeApp, { config, probes, hookPort: () => (fastify.server.address() as AddressInfo).port })

  async function shutdown (signal: string): Promise<void> {
    if (lifecycle.draining) return
    lifecycle.draining = true
    // Until the endpoint removal has reached every client, new connections still arrive: keep listening for a moment.
    // SIGINT (a person at a terminal) stops without the delay.
    const delayMs = signal === 'SIGTERM' ? config.shutdownDelayMs : 0
    fastify.log.info({ signal, delayMs }, 'shutting down: readiness is 503, still listening for the delay, finishing in-flight hooks')
    const deadline = setTimeout(() => {
      fastify.log.error({ timeoutMs: config.shutdownTimeoutMs }, 'in-flight hooks did not finish within HOOKS_SHUTDOWN_TIMEOUT; exiting')
      process.exit(1)
    }, config.shutdownTimeoutMs)
    await sleep(delayMs)
    await fastify.close()
    await probeServer.close()
    await postgres?.pool.end()
    await own?.stop()
    clearTimeout(deadline)
    fastify.log.info('stopped')
    process.exit(0)
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => { void shutdown(signal) })

  // The probe port last: the kubelet's first probe answering means the hook port is up too.
  const listeners = [{ server: fastify, port: config.port, variable: 'PORT' }, { server: probeServer, port: config.probePort, variable: 'HOOKS_PROBE_PORT' }]
  for (const { server, port, variable } of listeners) {
    try {
      await server.listen({ port, host: config.host })
    } catch (error) {
      fastify.log.fatal(cannotListen(error as NodeJS.ErrnoException, config.host, port, variable))
      await postgres?.pool.end()
      await own?.stop()
      process.exit(1)
    }
  }
  // The ports as listened on: PORT=0 or HOOKS_PROBE_PORT=0 leave them to the system, and this line says which it chose.
  const portOf = (server: typeof fastify | typeof probeServer): number => (server.server.address() as AddressInfo).port
  fastify.log.info({ controllers: controllers.map((c) => c.name), database: postgres?.description, port: portOf(fastify), probePort: portOf(probeServer) }, 'hook server ready')
  // Checked once now, so that a database that cannot be reached (a wrong password, a wrong host) is said at start-up,
  // not at the first probe; a change is logged, an unchanged state is not.
  probes.database?.current()
}

/** Why a port cannot be listened on, and what to do, in one line. */
function cannotListen (error: NodeJS.ErrnoException, host: string, port: number, variable: string): string {
  const where = `cannot listen on ${host} port ${port} (${variable})`
  switch (error.code) {
    case 'EADDRINUSE': return `${where}: another process is listening there; stop it, or set ${variable} to a free port`
    case 'EACCES': return `${where}: not permitted (ports below 1024 need privileges); set ${variable} to a port above 1023`
    case 'EADDRNOTAVAIL': return `${where}: ${host} is not an address of this machine; set HOST to one of its addresses, or to 0.0.0.0 for all of them`
    case 'ENOTFOUND':
    case 'EAI_AGAIN': return `${where}: the host name ${host} cannot be resolved; set HOST to an address of this machine, or to 0.0.0.0 for all of them`
    default: return `${where}: ${error.message}`
  }
}
