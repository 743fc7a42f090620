import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import { app, probeApp, probeServerOptions, serverOptions } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { needed, type Io } from './controller.js'
import { controllers } from './controllers.js'
import { connectionFromEnvironment, connectionFromUrl, type Connection } from './database/connection.js'
import { developmentDataDir, EmbeddedPostgresError, startEmbeddedPostgres, type EmbeddedPostgres } from './database/embedded.js'
import { connectPostgres } from './database/pool.js'
import { createProbes } from './probes.js'

/** The standalone entry point: configuration, database, listen, graceful shutdown. */

function fail (message: string): never {
  process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), msg: message })}\n`)
  process.exit(1)
}

let config: Config
let configured: Connection | undefined
try {
  config = loadConfig()
  configured = connectionFromEnvironment()
} catch (error) {
  fail(error instanceof ConfigError ? error.message : String(error))
}

const fastify = Fastify(serverOptions(config))
const lifecycle = { draining: false }

// Only the I/O some controller declared: a server of composites alone needs no database at all.
const io: Partial<Io> = {}
const needsPostgres = needed(controllers).has('postgres')
let embedded: EmbeddedPostgres | undefined
let connection = configured
if (connection === undefined && needsPostgres) {
  try {
    embedded = await startEmbeddedPostgres({
      dataDir: developmentDataDir(),
      persistent: true,
      durable: true,
      onLog: (line) => { fastify.log.debug({ postgres: line }) },
      onExit: (how) => { fastify.log.error(`the embedded PostgreSQL stopped (${how}): hooks answer DatabaseUnavailable until this server is restarted`) }
    })
  } catch (error) {
    const setOne = 'set DATABASE_URL, the PSQL_HOST/PSQL_PORT/PSQL_DBNAME/PSQL_USER/PSQL_PASSWORD variables, or libpq\'s PG* variables'
    if (error instanceof EmbeddedPostgresError && !error.installed) fail(`no database configured: ${setOne} (${error.message}, so no development database can be started)`)
    fail(`the embedded development PostgreSQL could not start: ${(error as Error).message} (to use another database, ${setOne})`)
  }
  connection = connectionFromUrl(embedded.connectionString, 'embedded')
  fastify.log.info({ database: embedded.description, dataDir: embedded.dataDir }, `no database configured: started an embedded PostgreSQL at ${embedded.description} (password "postgres", data in ${embedded.dataDir})`)
}

if (connection !== undefined && needsPostgres) io.postgres = connectPostgres(connection, config.database, fastify.log)
const probes = createProbes({ config, io, lifecycle, log: fastify.log })
await fastify.register(app, { config, controllers, io, lifecycle, probes })
const probeServer = Fastify(probeServerOptions(fastify.log))
await probeServer.register(probeApp, { config, probes })

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
  await io.postgres?.pool.end()
  await embedded?.stop()
  clearTimeout(deadline)
  fastify.log.info('stopped')
  process.exit(0)
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => { void shutdown(signal) })

try {
  await fastify.listen({ port: config.port, host: config.host })
  // Listening last: the kubelet's first probe answering means the hook port is up too.
  await probeServer.listen({ port: config.probePort, host: config.host })
  fastify.log.info({ controllers: controllers.map((c) => c.name), database: io.postgres?.description, probePort: (probeServer.server.address() as { port: number }).port }, 'hook server ready')
} catch (error) {
  fastify.log.error({ err: error }, `cannot listen on ${config.host}, port ${config.port} (PORT, hooks) or ${config.probePort} (HOOKS_PROBE_PORT, probes)`)
  await io.postgres?.pool.end()
  await embedded?.stop()
  process.exit(1)
}
