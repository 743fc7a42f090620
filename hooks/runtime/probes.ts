import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify'
import type { Config } from './config.js'
import { ping, type Postgres, type PostgresNeed } from '../database/pool.js'
import { createMetrics, type Metrics } from '../http/metrics.js'

/**
 * Health, readiness and metrics: served on the hook port and on the plain-HTTP probe port (HOOKS_PROBE_PORT), which the
 * kubelet and scrapers reach without a client certificate when the hook port asks for one.
 */

/** The longest /metrics waits for a database check before answering with the last known state. */
export const DATABASE_CHECK_WAIT_MS = 500

export interface DatabaseState {
  status: 'up' | 'down' | 'unknown'
  /** When the last check ended; absent before the first one has. */
  checkedAt?: string
  /** Why the last check failed (the driver's message: never a password). */
  message?: string
}

/**
 * PostgreSQL's reachability as readiness and the metrics report it. A check (`SELECT 1` through the pool) starts only
 * when someone asks and the last one is older than the interval, one at a time; nobody waits for it longer than
 * DATABASE_CHECK_WAIT_MS, so a probe never hangs on a database that does not answer.
 */
export class DatabaseHealth {
  private last: DatabaseState = { status: 'unknown' }
  private lastAt = Number.NEGATIVE_INFINITY
  private checking: Promise<void> | undefined

  constructor (private readonly postgres: Pick<Postgres, 'pool' | 'description' | 'conceal'>, private readonly intervalMs: number, private readonly log: FastifyBaseLogger) {}

  /** The last known state, at once; a check starts when it is older than the interval. */
  current (): DatabaseState {
    this.refresh()
    return this.last
  }

  /** The state once a check that was due has ended, or after DATABASE_CHECK_WAIT_MS, whichever comes first. */
  async state (): Promise<DatabaseState> {
    const checking = this.refresh()
    if (checking !== undefined) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([checking, new Promise((resolve) => { timer = setTimeout(resolve, DATABASE_CHECK_WAIT_MS) })])
      clearTimeout(timer)
    }
    return this.last
  }

  /** The check under way, started when the last one is older than the interval; undefined when none is due. */
  private refresh (): Promise<void> | undefined {
    if (Date.now() - this.lastAt < this.intervalMs) return undefined
    this.checking ??= this.check().finally(() => { this.checking = undefined })
    return this.checking
  }

  private async check (): Promise<void> {
    let next: DatabaseState
    try {
      await ping(this.postgres.pool)
      next = { status: 'up', checkedAt: new Date().toISOString() }
    } catch (error) {
      next = { status: 'down', checkedAt: new Date().toISOString(), message: this.postgres.conceal(String((error as Error).message)) }
    }
    if (next.status !== this.last.status) {
      const database = this.postgres.description
      if (next.status === 'up') this.log.info({ database }, 'database reachable')
      else this.log.warn({ database, reason: next.message }, 'database unreachable: PostgresWriter answers DatabaseUnavailable until it is back; the other controllers are unaffected')
    }
    this.last = next
    this.lastAt = Date.now()
  }
}

export interface Probes {
  /** Set by the server on SIGTERM: readiness turns 503 while in-flight hooks finish. */
  lifecycle: { draining: boolean }
  metrics: Metrics
  /** Absent when no controller needs PostgreSQL. */
  database: DatabaseHealth | undefined
}

export function createProbes (options: { config: Config, io: Partial<PostgresNeed>, lifecycle: { draining: boolean }, log: FastifyBaseLogger }): Probes {
  const { postgres } = options.io
  const database = postgres === undefined ? undefined : new DatabaseHealth(postgres, options.config.databaseCheckIntervalMs, options.log)
  return { lifecycle: options.lifecycle, database, metrics: createMetrics(database) }
}

/**
 * `/healthz` (the process answers), `/readyz` (503 only while draining: every hook can be served whatever the database
 * does, since PostgresWriter reports an unreachable database in its own status; the database's last known state is in
 * the body) and `/metrics`. /readyz waits for nothing: a busy server reaches the probe between two heavy steps (a body
 * at HOOKS_BODY_LIMIT parsed on a busy node), and the answer of a database check would come only after another,
 * against the kubelet's 1 s timeout.
 */
export const probeRoutes: FastifyPluginAsync<{ probes: Probes }> = async (fastify, { probes }) => {
  fastify.get('/healthz', async () => ({ status: 'ok' }))

  fastify.get('/readyz', async (_request, reply) => {
    const database = probes.database?.current()
    const { draining } = probes.lifecycle
    return await reply.code(draining ? 503 : 200).send({ status: draining ? 'draining' : 'ready', ...(database === undefined ? {} : { database }) })
  })

  fastify.get('/metrics', async (_request, reply) => {
    reply.header('content-type', probes.metrics.registry.contentType)
    return await probes.metrics.registry.metrics()
  })
}
