import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import type { DatabaseConfig, PostgresPolicy } from '../config.js'
import type { Connection } from './connection.js'

/** PostgreSQL as the controllers that declare `needs: ['postgres']` get it. */
export interface PostgresIo {
  pool: pg.Pool
  policy: PostgresPolicy
  /** Where the pool points, without the password: for messages. */
  description: string
}

/** The pool and policy for `connection`; the caller ends the pool. */
export function connectPostgres (connection: Connection, config: DatabaseConfig, log: FastifyBaseLogger): PostgresIo {
  return { pool: createPool(connection, config, log), policy: config.policy, description: connection.description }
}

/**
 * One pool per process. Every timeout sits well below Metacontroller's 10 s webhook timeout, so a hook
 * answers with a status that says what is wrong instead of hanging.
 */
function createPool (connection: Connection, config: DatabaseConfig, log: FastifyBaseLogger): pg.Pool {
  const pool = new pg.Pool({
    ...connection.clientConfig,
    max: config.poolMax,
    connectionTimeoutMillis: config.connectTimeoutMs,
    statement_timeout: config.statementTimeoutMs,
    lock_timeout: config.statementTimeoutMs,
    idle_in_transaction_session_timeout: config.statementTimeoutMs * 2,
    // Client-side backstop for a server that stops answering without closing the connection.
    query_timeout: config.statementTimeoutMs + 1000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: 'metacontroller-hooks'
  })
  // An idle client whose server went away emits here; unhandled, it would crash the process.
  pool.on('error', (error) => { log.warn({ err: error }, 'idle PostgreSQL connection lost; the pool will reconnect') })
  return pool
}

/** Resolves when the database answers a trivial query within the pool's timeouts. */
export async function ping (pool: pg.Pool): Promise<void> {
  await pool.query('SELECT 1')
}
