import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { app, serverOptions } from './app.js'
import type { Config } from './config.js'
import { createProbes, type Probes } from './probes.js'
import { configure, needed, type Controller } from '../framework/controller.js'
import { controllers as registry } from '../controllers.js'
import type { Connection } from '../database/connection.js'
import { connectPostgres, type Postgres, type PostgresNeed } from '../database/pool.js'
import type { AdmissionClock } from '../http/hook-call.js'

/**
 * The composition root: the app, built the one way for every place that serves hooks (the server, the tests, the
 * render tool and the plan), each giving what differs. Here each controller is configured with its own settings, and
 * the I/O the controllers declared is connected, once.
 */

export interface BuildOptions {
  config: Config
  /** The controllers to serve, as declared: the registry's by default. */
  controllers?: readonly Controller[]
  /**
   * Where PostgreSQL is, when a controller needs it: a connection, or how to get one once the app's log exists
   * (`npm start` starts a database of its own). Without it, a controller that needs PostgreSQL fails the build.
   */
  database?: Connection | ((log: FastifyBaseLogger) => Promise<Connection>)
  /** Set on SIGTERM: readiness turns 503 while in-flight hooks finish. A fresh one by default. */
  lifecycle?: { draining: boolean }
  /** The time stamped on conditions that change: the process's by default. */
  clock?: () => Date
  /** The clock and ticker of the admission of bodies; the process's by default. */
  admissionClock?: AdmissionClock
  /** Where the log lines go, one JSON object each: stdout by default. */
  logStream?: { write: (line: string) => void }
}

export interface Built {
  /** Registered and ready, not listening. */
  app: FastifyInstance
  /** The pool of the controllers that need PostgreSQL (none when none does): the caller ends it once the app is closed. */
  postgres: Postgres | undefined
  /** What health, readiness and metrics report: the probe port's app shares them. */
  probes: Probes
  lifecycle: { draining: boolean }
}

export async function build (options: BuildOptions): Promise<Built> {
  const { config } = options
  const defaults = serverOptions(config)
  const fastify = Fastify(options.logStream === undefined ? defaults : { ...defaults, logger: { ...defaults.logger as object, stream: options.logStream } })
  const controllers = (options.controllers ?? registry).map((controller) => configure(controller, config.settings))
  // Only the I/O some controller declared: a server of composites alone needs no database at all.
  const io: Partial<PostgresNeed> = {}
  if (needed(controllers).has('postgres') && options.database !== undefined) {
    const connection = typeof options.database === 'function' ? await options.database(fastify.log) : options.database
    io.postgres = connectPostgres(connection, config.database, fastify.log)
  }
  const lifecycle = options.lifecycle ?? { draining: false }
  const probes = createProbes({ config, io, lifecycle, log: fastify.log })
  try {
    await fastify.register(app, { config, controllers, io, lifecycle, probes, clock: options.clock, admissionClock: options.admissionClock })
    await fastify.ready()
  } catch (error) {
    await io.postgres?.pool.end()
    throw error
  }
  return { app: fastify, postgres: io.postgres, probes, lifecycle }
}
