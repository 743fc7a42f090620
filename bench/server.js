import Fastify from 'fastify'
import { app, serverOptions } from '../dist/app.js'
import { loadConfig } from '../dist/config.js'
import { controllers } from '../dist/controllers.js'
import { connectionFromEnvironment } from '../dist/database/connection.js'
import { connectPostgres } from '../dist/database/pool.js'

/**
 * The production server (dist/, as dist/server.js runs it) without the embedded database: bench/run.ts starts it
 * with DATABASE_URL, PORT and HOST set. Plain JavaScript, so that no TypeScript loader sits in the measured process.
 */

const config = loadConfig()
const connection = connectionFromEnvironment()
if (connection === undefined) throw new Error('bench/server.js needs DATABASE_URL')

const fastify = Fastify(serverOptions(config))
const postgres = connectPostgres(connection, config.database, fastify.log)
await fastify.register(app, { config, controllers, io: { postgres }, lifecycle: { draining: false } })

process.once('SIGTERM', async () => {
  await fastify.close()
  await postgres.pool.end()
  // An explicit exit, so that `node --cpu-prof` writes its profile.
  process.exit(0)
})

await fastify.listen({ port: config.port, host: config.host })
