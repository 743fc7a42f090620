import pg from 'pg'
import { DeadlineExceeded, preparedStatementFailed, type Postgres } from '../database/index.js'
import { RETRY_REFUSED_SECONDS, RETRY_UNAVAILABLE_SECONDS, type Failed } from './sync.js'
import { ROW_SHAPE } from './tables.js'

/** What a PostgreSQL error means for a PostgresWriter call: a reason a person can act on. */

/**
 * The SQLSTATE of an error PostgreSQL reported; undefined for a network or driver error, whose `code` (if any) is
 * Node's, such as ECONNRESET or EPIPE.
 */
export function sqlState (error: unknown): string | undefined {
  return error instanceof pg.DatabaseError ? error.code : undefined
}

/** SQLSTATEs that mean the database is unreachable, overloaded, shutting down, or too slow right now. */
function unavailable (code: string | undefined): boolean {
  if (code === undefined) return true
  return ['08', '53', '57', '28', '3D', '40'].includes(code.slice(0, 2)) || code === '55P03'
}

/**
 * SQLSTATEs that say a table is not (or no longer) what the hook took it for: a column, type, constraint or table
 * that changed since it was looked at. The table is looked at again, to say exactly what is wrong with it.
 */
function tableChanged (error: unknown): boolean {
  if (preparedStatementFailed(error)) return false
  const code = sqlState(error) ?? ''
  return (code.startsWith('42') && code !== '42501') || ['0A000', '23502'].includes(code)
}

/**
 * When a run of a placement or finalize failed because a table changed under it, what the error said: the call runs
 * again, or after its last run reports that the tables kept changing (retried soon). Any other error is thrown, to be
 * reported as what it is, and so is a change other than a dropped table at the last run.
 */
export function runAgainAfter (error: unknown, lastRun: boolean): string {
  if (!tableChanged(error) || (lastRun && sqlState(error) !== '42P01')) throw error
  return ` (${(error as Error).message})`
}

export function classifyFailure (error: unknown, { description, conceal }: Pick<Postgres, 'description' | 'conceal'>): Failed {
  const code = sqlState(error)
  const message = conceal(String((error as Error).message))
  if (error instanceof DeadlineExceeded || unavailable(code)) {
    return { kind: 'failed', reason: 'DatabaseUnavailable', message: `PostgreSQL (${description}) is unavailable: ${message}; retrying in ${RETRY_UNAVAILABLE_SECONDS}s`, retryAfterSeconds: RETRY_UNAVAILABLE_SECONDS }
  }
  if (code === '42501') {
    return { kind: 'failed', reason: 'PermissionDenied', message: `PostgreSQL refused: ${message}; grant the hook's user access to the table`, retryAfterSeconds: RETRY_REFUSED_SECONDS }
  }
  if (code === '42P01' || code === '3F000') return tableMissing(message)
  return { kind: 'failed', reason: 'TableIncompatible', message: `the table cannot hold the row (${message}, SQLSTATE ${code}); ${ROW_SHAPE}`, retryAfterSeconds: RETRY_REFUSED_SECONDS }
}

export function tableMissing (message: string): Failed {
  return { kind: 'failed', reason: 'TableMissing', message: `${message}; create it (id text primary key, name text, age integer, country text) or set PG_AUTO_CREATE_TABLES=true`, retryAfterSeconds: RETRY_REFUSED_SECONDS }
}

export const refused = (reason: string, message: string): Failed => ({ kind: 'failed', reason, message, retryAfterSeconds: RETRY_REFUSED_SECONDS })

/** Two hooks creating the same table at once: one wins, the other sees a duplicate in the catalog. */
export function ignoreConcurrentCreate (error: unknown): void {
  if (!['23505', '42P06', '42P07', '42710'].includes(sqlState(error) ?? '')) throw error
}
