import type pg from 'pg'
import { remembered, runBatch, statement, type StatementDefinition, type Value } from '../database/index.js'
import { ignoreConcurrentCreate } from './failures.js'
import { createSchema, hookTablesDdl, migrationDdl, rowTableDdl } from './statements.js'

/**
 * What the row store says to PostgreSQL in one call, on one connection: statements of statements.ts, and the DDL
 * PG_AUTO_CREATE_TABLES allows. The row store decides what to send (rows.ts, table-readiness.ts); a session sends
 * it: `PostgresSession` to PostgreSQL, or the plan's forecast to a snapshot of the rows (dev/plan/postgres-writer.ts).
 */

/** A statement to send: its definition, the identifiers its text names (`shape`), and its parameters' values. */
export interface Query {
  definition: StatementDefinition<string, any>
  shape: unknown
  values: Readonly<Record<string, Value>>
}

export function query<Parameter extends string, Shape> (definition: StatementDefinition<Parameter, Shape>, shape: Shape, values: Readonly<Record<Parameter, Value>>): Query {
  return { definition, shape, values }
}

/** What PG_AUTO_CREATE_TABLES lets a call create: the hook's own tables, a row's table, or an earlier version's tables migrated. */
export type Ddl =
  | { action: 'createHookTables' }
  | { action: 'createTable', table: string }
  | { action: 'migrate', earlierTables: readonly string[] }

export interface Session {
  /** Runs `queries` in one round trip, as one transaction: the rows each answered. */
  batch: (queries: readonly Query[]) => Promise<unknown[][]>
  /** Creates or migrates, in the schema; another call creating the same at once is no error. */
  change: (ddl: Ddl) => Promise<void>
  /** Runs `work` in one transaction, committed when it returns, rolled back when it throws. */
  transaction: (work: () => Promise<void>) => Promise<void>
}

/** Statement texts kept per store; past this many (a schema of many tables), they are built afresh. */
const MAX_TEXTS = 256

/** The texts of the statements a store sends, each built once per shape: kept by the store, across its calls. */
export type Texts = Map<string, string>

/** A call's session on a pooled connection: statements named where PG_PREPARED_STATEMENTS allows (database/prepared-statements.ts). */
export class PostgresSession implements Session {
  constructor (private readonly db: pg.PoolClient, private readonly schema: string, private readonly prepared: boolean, private readonly texts: Texts) {}

  async batch (queries: readonly Query[]): Promise<unknown[][]> {
    const statements = queries.map(({ definition, shape, values }) => {
      const text = remembered(this.texts, MAX_TEXTS, `${definition.name} ${JSON.stringify(shape)}`, () => definition.text(shape))
      return statement(this.db, this.prepared, text, definition.values(values))
    })
    return (await runBatch(this.db, statements)).map(({ rows }) => rows)
  }

  async change (ddl: Ddl): Promise<void> {
    if (ddl.action === 'migrate') {
      for (const text of migrationDdl(this.schema, ddl.earlierTables)) await this.db.query(text)
      return
    }
    const statements = ddl.action === 'createHookTables' ? hookTablesDdl(this.schema) : [rowTableDdl(this.schema, ddl.table)]
    for (const text of [createSchema(this.schema), ...statements]) await this.db.query(text).catch(ignoreConcurrentCreate)
  }

  async transaction (work: () => Promise<void>): Promise<void> {
    await this.db.query('BEGIN')
    try {
      await work()
      await this.db.query('COMMIT')
    } catch (error) {
      await this.db.query('ROLLBACK').catch(() => {})
      throw error
    }
  }
}
