import type pg from 'pg'
import type { PostgresPolicy } from '../config.js'
import type { DeletePlan, Row, WriteResult } from './plan.js'

/**
 * The PostgreSQL side of PostgresWriter. Every value travels as a parameter; table and schema names reach SQL
 * only after plan.ts validated them as identifiers, and are quoted here.
 */

const RETRY_UNAVAILABLE_SECONDS = 10
const RETRY_REFUSED_SECONDS = 60

const quote = (identifier: string): string => `"${identifier}"`

interface DatabaseError extends Error { code?: string }

/** SQLSTATEs that mean the database is unreachable, overloaded, shutting down, or too slow right now. */
function unavailable (code: string | undefined): boolean {
  if (code === undefined || !/^[0-9A-Z]{5}$/.test(code)) return true // network and driver errors carry no SQLSTATE
  return ['08', '53', '57', '28', '3D', '40'].includes(code.slice(0, 2)) || code === '55P03'
}

export function classifyFailure (error: unknown, description: string): Extract<WriteResult, { kind: 'failed' }> {
  const { code, message } = error as DatabaseError
  if (unavailable(code)) {
    return { kind: 'failed', reason: 'DatabaseUnavailable', message: `PostgreSQL (${description}) is unavailable: ${message}; retrying in ${RETRY_UNAVAILABLE_SECONDS}s`, retryAfterSeconds: RETRY_UNAVAILABLE_SECONDS }
  }
  if (code === '42501') {
    return { kind: 'failed', reason: 'PermissionDenied', message: `PostgreSQL refused: ${message}; grant the hook's user access to the table`, retryAfterSeconds: RETRY_REFUSED_SECONDS }
  }
  if (code === '42P01' || code === '3F000') {
    return { kind: 'failed', reason: 'TableMissing', message: `${message}; create it (id text primary key, name text, age integer, country text) or set PG_AUTO_CREATE_TABLES=true`, retryAfterSeconds: RETRY_REFUSED_SECONDS }
  }
  return { kind: 'failed', reason: 'TableIncompatible', message: `the table cannot hold the row (${message}, SQLSTATE ${code}); it needs id text primary key, name text, age integer, country text`, retryAfterSeconds: RETRY_REFUSED_SECONDS }
}

const missingTable = (error: unknown): boolean => ['42P01', '3F000'].includes((error as DatabaseError).code ?? '')

export class RowStore {
  constructor (private readonly pool: pg.Pool, private readonly policy: PostgresPolicy, private readonly description: string) {}

  private table (name: string): string {
    return `${quote(this.policy.schema)}.${quote(name)}`
  }

  /** Upserts the row, writing nothing when it already matches; moves it out of `previousTable` in the same transaction. */
  async write (row: Row, table: string, previousTable: string | undefined): Promise<WriteResult> {
    try {
      await this.withTable(table, async () => {
        if (previousTable === undefined) {
          await this.upsert(this.pool, row, table)
        } else {
          await this.move(row, table, previousTable)
        }
      })
      return { kind: 'done' }
    } catch (error) {
      return classifyFailure(error, this.description)
    }
  }

  /** Deletes the row from every table of the plan; a missing table or row counts as deleted. */
  async delete (plan: DeletePlan): Promise<WriteResult> {
    try {
      for (const table of plan.tables) {
        await this.pool.query(`DELETE FROM ${this.table(table)} WHERE id = $1`, [plan.id]).catch((error: unknown) => {
          if (!missingTable(error)) throw error
        })
      }
      return { kind: 'done' }
    } catch (error) {
      return classifyFailure(error, this.description)
    }
  }

  private async upsert (client: pg.Pool | pg.PoolClient, row: Row, table: string): Promise<void> {
    await client.query(
      `INSERT INTO ${this.table(table)} AS t (id, name, age, country) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country
       WHERE (t.name, t.age, t.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)`,
      [row.id, row.name, row.age, row.country]
    )
  }

  private async move (row: Row, table: string, previousTable: string): Promise<void> {
    const client = await this.pool.connect()
    try {
      await client.query('BEGIN')
      await this.upsert(client, row, table)
      const previous = await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [this.table(previousTable)])
      if (previous.rows[0]?.present === true) {
        await client.query(`DELETE FROM ${this.table(previousTable)} WHERE id = $1`, [row.id])
      }
      await client.query('COMMIT')
      client.release()
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {})
      // Its connection may be what failed: never hand it back to the pool.
      client.release(true)
      throw error
    }
  }

  /** Runs `work`; when the table (or schema) is missing and auto-creation is on, creates it and runs `work` once more. */
  private async withTable (table: string, work: () => Promise<void>): Promise<void> {
    try {
      await work()
    } catch (error) {
      if (!missingTable(error) || !this.policy.autoCreateTables) throw error
      await this.createTable(table)
      await work()
    }
  }

  private async createTable (table: string): Promise<void> {
    await this.pool.query(`CREATE SCHEMA IF NOT EXISTS ${quote(this.policy.schema)}`).catch(ignoreConcurrentCreate)
    await this.pool.query(
      `CREATE TABLE IF NOT EXISTS ${this.table(table)} (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, country text NOT NULL)`
    ).catch(ignoreConcurrentCreate)
  }
}

/** Two hooks creating the same table at once: one wins, the other sees a duplicate in the catalog. */
function ignoreConcurrentCreate (error: unknown): void {
  if (!['23505', '42P07', '42P06'].includes((error as DatabaseError).code ?? '')) throw error
}
