import type pg from 'pg'
import type { PostgresPolicy } from '../config.js'
import type { PostgresIo } from '../database/pool.js'
import { writableTable, type Row, type WriteResult } from './sync.js'

/**
 * The PostgreSQL side of PostgresWriter. Every value travels as a parameter; table and schema names reach SQL
 * only after sync.ts validated them as identifiers, and are quoted here.
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

/**
 * The tables of the schema (the parameter `schemaParameter`, e.g. `$1`) shaped like a PostgresWriter table (text id,
 * name, age, country) that this user may delete from. pg_catalog rather than information_schema: planning those
 * views cost 6 ms a call, against 0.5 ms for this.
 */
const rowTablesQuery = (schemaParameter: string): string => `SELECT c.relname AS table_name
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  WHERE n.nspname = ${schemaParameter} AND c.relkind IN ('r', 'p') AND has_table_privilege(c.oid, 'DELETE')
    AND a.attname IN ('id', 'name', 'age', 'country')
  GROUP BY c.relname
  HAVING count(*) = 4 AND bool_or(a.attname = 'id' AND a.atttypid IN ('text'::regtype, 'varchar'::regtype))`

const missingTable = (error: unknown): boolean => ['42P01', '3F000'].includes((error as DatabaseError).code ?? '')

export class RowStore {
  private readonly pool: pg.Pool
  private readonly policy: PostgresPolicy
  private readonly description: string

  constructor ({ pool, policy, description }: PostgresIo) {
    this.pool = pool
    this.policy = policy
    this.description = description
  }

  private table (name: string): string {
    return `${quote(this.policy.schema)}.${quote(name)}`
  }

  /**
   * Makes the row equal the spec in `table`, writing nothing when it already does. When the last acknowledged sync
   * put it in `table` and it is still there, that takes one statement. Otherwise (first write, table change, an
   * answer that never arrived, a concurrent move) the row is upserted and deleted from every other table in one
   * transaction, so that each object owns exactly one row.
   */
  async write (row: Row, table: string, placed: boolean): Promise<WriteResult> {
    try {
      await this.withTable(table, async () => {
        if (placed && await this.updateInPlace(row, table)) return
        if ((await this.upsertIfAlone(row, table)).length === 0) return
        await this.transaction(row.id, async (client) => {
          await this.upsert(client, row, table)
          await this.deleteFrom(client, row.id, (await this.rowTables(client)).filter((other) => other !== table))
        })
      })
      return { kind: 'done' }
    } catch (error) {
      return classifyFailure(error, this.description)
    }
  }

  /** Deletes the row from every table that could hold it; none at all counts as deleted. */
  async delete (id: string): Promise<WriteResult> {
    try {
      await this.transaction(id, async (client) => { await this.deleteFrom(client, id, await this.rowTables(client)) })
      return { kind: 'done' }
    } catch (error) {
      return classifyFailure(error, this.description)
    }
  }

  /** Updates the row where it is, if it differs; false when `table` does not hold it. */
  private async updateInPlace (row: Row, table: string): Promise<boolean> {
    const result = await this.pool.query<{ present: boolean }>(
      `WITH changed AS (
         UPDATE ${this.table(table)} AS t SET name = $2, age = $3, country = $4
         WHERE id = $1 AND (t.name, t.age, t.country) IS DISTINCT FROM ($2::text, $3::integer, $4::text)
       )
       SELECT EXISTS (SELECT 1 FROM ${this.table(table)} WHERE id = $1) AS present`,
      [row.id, row.name, row.age, row.country]
    )
    return result.rows[0]?.present === true
  }

  /**
   * When `table` is the schema's only row-shaped table, upserts the row under its advisory lock, in one statement.
   * Otherwise writes nothing (the transaction that also deletes the other copies does it) and lists the others.
   */
  private async upsertIfAlone (row: Row, table: string): Promise<string[]> {
    const result = await this.pool.query<{ table_name: string }>(
      `WITH locked AS (SELECT pg_advisory_xact_lock(hashtextextended($1, 0))),
       others AS (SELECT table_name FROM (${rowTablesQuery('$5')}) row_tables WHERE table_name <> $6),
       written AS (${this.upsertStatement(table, 'SELECT $1, $2, $3, $4 FROM locked WHERE NOT EXISTS (SELECT 1 FROM others)')})
       SELECT table_name FROM others`,
      [row.id, row.name, row.age, row.country, this.policy.schema, table]
    )
    return result.rows.map((r) => r.table_name)
  }

  private async upsert (client: pg.PoolClient, row: Row, table: string): Promise<void> {
    await client.query(this.upsertStatement(table, 'VALUES ($1, $2, $3, $4)'), [row.id, row.name, row.age, row.country])
  }

  /** Inserts the row `source` yields ($1..$4: id, name, age, country), updating an existing one only where it differs. */
  private upsertStatement (table: string, source: string): string {
    return `INSERT INTO ${this.table(table)} AS t (id, name, age, country) ${source}
       ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country
       WHERE (t.name, t.age, t.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)`
  }

  private async deleteFrom (client: pg.PoolClient, id: string, tables: string[]): Promise<void> {
    for (const table of tables) await client.query(`DELETE FROM ${this.table(table)} WHERE id = $1`, [id])
  }

  /** The tables of the schema shaped like a PostgresWriter table that custom resources may write. */
  private async rowTables (client: pg.PoolClient): Promise<string[]> {
    const result = await client.query<{ table_name: string }>(rowTablesQuery('$1'), [this.policy.schema])
    return result.rows.map((r) => r.table_name).filter((table) => writableTable(table, this.policy))
  }

  /** Runs `work` in a transaction that holds this row's advisory lock, so that two placements of one row never interleave. */
  private async transaction (id: string, work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    const client = await this.pool.connect()
    // A checked-out client whose server dies between two statements emits 'error'; unheard, it would crash the
    // process. The statement in flight (or the next one) fails with it anyway.
    const ignore = (): void => {}
    client.on('error', ignore)
    try {
      await client.query('BEGIN')
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [id])
      await work(client)
      await client.query('COMMIT')
      client.release()
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {})
      // Its connection may be what failed: never hand it back to the pool.
      client.release(true)
      throw error
    } finally {
      client.off('error', ignore)
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
  if (!['23505', '42P06', '42P07', '42710'].includes((error as DatabaseError).code ?? '')) throw error
}
