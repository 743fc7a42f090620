import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import type { Connection } from './connection.js'

export interface DatabaseConfig {
  /** Where the database is, from DATABASE_URL, PSQL_* or PG*; undefined when none of them is set. */
  connection: Connection | undefined
  poolMax: number
  connectTimeoutMs: number
  statementTimeoutMs: number
  /** What one hook call may spend on PostgreSQL in all, from its start to its answer. */
  hookDeadlineMs: number
  /** Send statements as named prepared statements (see database/prepared-statements.ts). */
  preparedStatements: boolean
}

/** PostgreSQL as the controllers that declare `needs: ['postgres']` get it: the process's pool, and how to use it. */
export interface Postgres {
  pool: pg.Pool
  /** Where the pool points, without the password: for messages. */
  description: string
  /** Removes the password from a driver's message before it goes into a status or a log line. */
  conceal: (text: string) => string
  /** What one hook call may spend on PostgreSQL in all (PG_HOOK_DEADLINE). */
  deadlineMs: number
  /** Whether statements are sent as named prepared statements (PG_PREPARED_STATEMENTS). */
  preparedStatements: boolean
}

/** What a controller that declares `needs: ['postgres']` is given: PostgreSQL, under the name it declares. */
export interface PostgresNeed {
  postgres: Postgres
}

/** The pool for `connection`; the caller ends it. */
export function connectPostgres (connection: Connection, config: DatabaseConfig, log: FastifyBaseLogger): Postgres {
  return {
    pool: createPool(connection, config, log),
    description: connection.description,
    conceal: connection.conceal,
    deadlineMs: config.hookDeadlineMs,
    preparedStatements: config.preparedStatements
  }
}

/**
 * One pool per process. A hook call as a whole is bounded by PG_HOOK_DEADLINE (see deadline.ts), so no single
 * statement may outlast it either, even when the cancel sent at the deadline never arrives.
 */
function createPool (connection: Connection, config: DatabaseConfig, log: FastifyBaseLogger): pg.Pool {
  const statementTimeoutMs = Math.min(config.statementTimeoutMs, config.hookDeadlineMs)
  const pool = new pg.Pool({
    ...connection.clientConfig,
    max: config.poolMax,
    connectionTimeoutMillis: config.connectTimeoutMs,
    statement_timeout: statementTimeoutMs,
    lock_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: statementTimeoutMs * 2,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: 'metacontroller-hooks'
  })
  // Every client gets a listener for its whole life, from the moment it is connected: a client whose server dies
  // emits 'error', idle or checked out, and an 'error' event without a listener would end the process. The
  // statement in flight (or the next one) fails with it anyway, and answers DatabaseUnavailable.
  pool.on('connect', (client) => {
    client.on('error', (error: Error & { code?: string }) => {
      log.warn({ code: error.code, reason: connection.conceal(error.message) }, 'PostgreSQL connection lost; the pool replaces it')
    })
  })
  // The pool re-emits the error of an idle client, which the listener above has logged already.
  pool.on('error', () => {})
  return pool
}

/** Resolves when the database answers a trivial query within the pool's timeouts. */
export async function ping (pool: pg.Pool): Promise<void> {
  await pool.query('SELECT 1')
}
