import pg from 'pg'
import { runBatch, type StatementResult, type Value } from '../database/pg-internals.js'
import { DeadlineExceeded, withinDeadline } from '../database/deadline.js'
import type { PostgresIo } from '../database/pool.js'
import { markBroken, mustDiscard, preparedStatementFailed, remembered, statement } from '../database/statements.js'
import { TABLE_NAME_PATTERN } from './resource.js'
import type { Row, WriteResult } from './sync.js'
import {
  inspectStatement, qualified, quote, ROW_SHAPE, rowTableDdl, rowTablesQuery, tableVerdict,
  TOMBSTONE_RETENTION_SECONDS, TOMBSTONES_TABLE, tombstonesDdl, type Relation
} from './tables.js'

/**
 * The PostgreSQL side of PostgresWriter. Every value travels as a parameter; table and schema names reach SQL
 * only after sync.ts validated them as identifiers, and are quoted here. Each hook call runs on one connection,
 * within PG_HOOK_DEADLINE (database/deadline.ts).
 */

const RETRY_UNAVAILABLE_SECONDS = 10
const RETRY_REFUSED_SECONDS = 60

type Failed = Extract<WriteResult, { kind: 'failed' }>

/**
 * The SQLSTATE of an error PostgreSQL reported; undefined for a network or driver error, whose `code` (if any) is
 * Node's, such as ECONNRESET or EPIPE.
 */
function sqlState (error: unknown): string | undefined {
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

export function classifyFailure (error: unknown, { description, conceal }: Pick<PostgresIo, 'description' | 'conceal'>): Failed {
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

function tableMissing (message: string): Failed {
  return { kind: 'failed', reason: 'TableMissing', message: `${message}; create it (id text primary key, name text, age integer, country text) or set PG_AUTO_CREATE_TABLES=true`, retryAfterSeconds: RETRY_REFUSED_SECONDS }
}

const refused = (reason: string, message: string): Failed => ({ kind: 'failed', reason, message, retryAfterSeconds: RETRY_REFUSED_SECONDS })

/** What a placement reports. */
interface Placement {
  /** The table's name still means the table found fit (its OID). */
  sameTable: boolean
  /** The object's uid is tombstoned: it was finalized. */
  finalized: boolean
  /** The other tables that may hold a copy were the ones the statement deleted it from; otherwise it wrote nothing. */
  expected: boolean
  /** Rows the statement wrote, and whether the row written reads back as sent. */
  written: number
  kept: boolean
  /** Before the statement, the table held the row as the spec says. */
  matched: boolean
  /** Every table that may hold a copy, `table` included when it is one. */
  tables: string[]
}

type Query = readonly [text: string, values: readonly Value[]]

/** The row's advisory lock, held until the transaction ends: placements and finalizes of one row never interleave. */
const lockRow = (id: string): Query => ['SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [id]]

/**
 * How many times a placement or finalize runs again when the tables that may hold the row were not the ones it
 * expected: each run learns them, so only tables created or dropped between two runs make another one.
 */
const ATTEMPTS_FOR_TABLES = 3

/**
 * How long a table found fit is taken to stay so. Every write checks that the table's name still means the table
 * found fit (its OID), which catches a table dropped and created again as anything else; what can change under the
 * same OID (ATTACH PARTITION, INHERIT, a column's type) shows as a failed write or at the next look, at most this late.
 */
const FIT_FOR_MS = 60_000

/** Statement texts kept per store; past this many (a schema of many tables), they are built afresh. */
const MAX_TEXTS = 256

export class RowStore {
  /** Tables found fit, by name: the OID they had then, and when. */
  private readonly fit = new Map<string, { oid: string, at: number }>()
  private tombstonesExist = false
  /**
   * The tables that may hold a row, as the last placement or finalize found them: those the next one deletes the row
   * from. Never trusted: the statement compares them with the catalog as it runs, and writes nothing when they differ.
   */
  private tables: readonly string[] = []
  /** Statement texts, each built once: by what it does, and on which tables. */
  private readonly texts = new Map<string, string>()
  /** PG_TABLE_ALLOWLIST as a parameter: null admits every table. */
  private readonly allowlist: readonly string[] | null

  constructor (private readonly io: PostgresIo) {
    const { tableAllowlist } = io.policy
    this.allowlist = tableAllowlist === undefined ? null : [...tableAllowlist]
  }

  private get schema (): string {
    return this.io.policy.schema
  }

  private table (name: string): string {
    return qualified(this.schema, name)
  }

  private get tombstones (): string {
    return this.table(TOMBSTONES_TABLE)
  }

  /**
   * Makes the row equal the spec in `table`, writing nothing when it already does, unless the object was finalized.
   * When the last acknowledged sync put it in `table` and it is still there, that takes one statement. Otherwise
   * (first write, table change, an answer that never arrived, a concurrent move) the row is placed: upserted, and
   * deleted from every other table, in one transaction that holds the row's advisory lock.
   */
  async write (row: Row, table: string, placed: boolean, uid: string): Promise<WriteResult> {
    return await this.run(async (db) => {
      for (let attempt = 1; ; attempt++) {
        const fit = await this.fitTable(db, table)
        if (typeof fit !== 'string') return fit
        try {
          const result = (placed ? await this.inPlace(db, row, table, uid, fit) : undefined) ?? await this.place(db, row, table, uid, fit)
          if (result !== 'stale') return result
        } catch (error) {
          if (!tableChanged(error) || attempt === 2) throw error
        }
        // A table changed since it was looked at: look at it again, and say what is wrong with it, if anything.
        this.fit.delete(table)
        this.tombstonesExist = false
        this.tables = []
        if (attempt === 2) return classifyFailure(new Error('the table changed while the row was being written'), this.io)
      }
    })
  }

  /**
   * Deletes the row from every table that could hold it (none at all counts as deleted) and tombstones the object's
   * uid, in one statement after the row's advisory lock. A uid already tombstoned was finalized before: its row is
   * gone, and a row under the same id now belongs to an object created since under the same name, which a late
   * finalize must not delete.
   */
  async delete (id: string, uid: string): Promise<WriteResult> {
    return await this.run(async (db) => {
      for (let attempt = 1; ; attempt++) {
        const tombstones = await this.tombstonesReady(db)
        try {
          const [, finalize] = await this.batch(db, [lockRow(id), this.finalize(id, uid, tombstones, this.tables)])
          const report = finalize?.rows[0] as { expected: boolean, tables: string[] }
          this.tables = report.tables
          if (report.expected) return { kind: 'done' }
        } catch (error) {
          if (!tableChanged(error) || attempt === ATTEMPTS_FOR_TABLES) throw error
          this.tombstonesExist = false
          this.tables = []
        }
        if (attempt === ATTEMPTS_FOR_TABLES) return this.tablesKeptChanging()
      }
    })
  }

  /**
   * Runs a hook call's work within its deadline; every failure becomes a result with a reason. When a prepared
   * statement fails (a pooler that lost it, a table whose new shape its plan cannot take), the work runs once more
   * with unnamed statements, and the connection is discarded at the end of the call. Each batch of statements is a
   * transaction of its own, so a failed one leaves none open.
   */
  private async run (work: (db: pg.PoolClient) => Promise<WriteResult>): Promise<WriteResult> {
    try {
      return await withinDeadline(this.io, async (db) => {
        try {
          return await work(db)
        } catch (error) {
          if (!preparedStatementFailed(error) || mustDiscard(db)) throw error
          markBroken(db)
          return await work(db)
        }
      })
    } catch (error) {
      return classifyFailure(error, this.io)
    }
  }

  /**
   * The OID of `table` once it is known to be an ordinary table that can hold the row, and the tombstones table
   * exists (both created when missing and PG_AUTO_CREATE_TABLES allows it); otherwise why not. Looked up in the
   * catalog the first time, then remembered: every write checks, in its own statement, that it still holds.
   */
  private async fitTable (db: pg.PoolClient, table: string): Promise<string | Failed> {
    const known = this.fit.get(table)
    if (known !== undefined && this.tombstonesExist && performance.now() - known.at < FIT_FOR_MS) return known.oid
    let inspected = await this.inspect(db, table)
    if ((inspected.relation === undefined || !inspected.tombstones) && this.io.policy.autoCreateTables) {
      await this.create(db, [...inspected.relation === undefined ? [rowTableDdl(this.schema, table)] : [], ...tombstonesDdl(this.schema)])
      inspected = await this.inspect(db, table)
    }
    if (inspected.relation === undefined) return tableMissing(`relation "${this.schema}.${table}" does not exist`)
    if (!inspected.tombstones) return refused('TableMissing', this.tombstonesMissing())
    const verdict = tableVerdict(this.schema, table, inspected.relation)
    if (verdict.kind === 'unfit') return refused(verdict.reason, verdict.message)
    this.fit.set(table, { oid: verdict.oid, at: performance.now() })
    this.tombstonesExist = true
    return verdict.oid
  }

  /** Whether the tombstones table exists, created when it does not and PG_AUTO_CREATE_TABLES allows it. */
  private async tombstonesReady (db: pg.PoolClient): Promise<boolean> {
    if (this.tombstonesExist) return true
    if ((await this.inspect(db, TOMBSTONES_TABLE)).tombstones) return (this.tombstonesExist = true)
    if (!this.io.policy.autoCreateTables) return false
    await this.create(db, tombstonesDdl(this.schema))
    return (this.tombstonesExist = true)
  }

  private tombstonesMissing (): string {
    const ddl = tombstonesDdl(this.schema).map((statement) => `${statement.replace(' IF NOT EXISTS', '')};`).join(' ')
    return `relation "${this.schema}.${TOMBSTONES_TABLE}" does not exist: the hook records there the uid of every finalized PostgresWriter, so that no call that arrives after the finalize writes its row again; create it (${ddl}) and grant the hook's user SELECT, INSERT and DELETE on it, or set PG_AUTO_CREATE_TABLES=true; nothing was written`
  }

  private tablesKeptChanging (): Failed {
    return {
      kind: 'failed',
      reason: 'DatabaseUnavailable',
      message: `the tables of schema ${this.schema} that may hold the row changed ${ATTEMPTS_FOR_TABLES} times while the call ran; retrying in ${RETRY_UNAVAILABLE_SECONDS}s`,
      retryAfterSeconds: RETRY_UNAVAILABLE_SECONDS
    }
  }

  private async inspect (db: pg.PoolClient, table: string): Promise<{ tombstones: boolean, relation: Relation | undefined }> {
    const [row] = (await this.query<Relation & { tombstones: boolean, oid: string | null }>(db, inspectStatement, [this.schema, table])).rows
    return { tombstones: row?.tombstones === true, relation: row?.oid === null || row === undefined ? undefined : row }
  }

  /**
   * Runs `queries` in one round trip, as one transaction (database/pg-internals.ts), named when PG_PREPARED_STATEMENTS allows
   * (database/statements.ts).
   */
  private async batch (db: pg.PoolClient, queries: readonly Query[]): Promise<Array<StatementResult<pg.QueryResultRow>>> {
    return await runBatch(db, queries.map(([text, values]) => statement(db, this.io.preparedStatements, text, values)))
  }

  private async query<R extends pg.QueryResultRow> (db: pg.PoolClient, text: string, values: readonly Value[]): Promise<StatementResult<R>> {
    const [result] = await this.batch(db, [[text, values]])
    return result as StatementResult<R>
  }

  /** The statement text `key` names, built by `build` the first time. */
  private text (key: string, build: () => string): string {
    return remembered(this.texts, MAX_TEXTS, key, build)
  }

  /** Runs DDL statements; another hook creating the same at once is no error. */
  private async create (db: pg.PoolClient, statements: string[]): Promise<void> {
    await db.query(`CREATE SCHEMA IF NOT EXISTS ${quote(this.schema)}`).catch(ignoreConcurrentCreate)
    for (const statement of statements) await db.query(statement).catch(ignoreConcurrentCreate)
  }

  /** Whether the uid ($5) is tombstoned; nothing is written for it. */
  private finalized (): string {
    return `EXISTS (SELECT 1 FROM ${this.tombstones} WHERE uid = $5)`
  }

  /**
   * The row where the last acknowledged sync put it: read, and updated when it differs, as long as the object was not
   * finalized (so that a late sync of a finalized object stays off the row of an object created since under the same
   * name). An unchanged resync, the common call, is one read of one row. The table is known by the OID of the table
   * the row comes from. Undefined when the row must be placed: it is not there, or was not updated.
   */
  private async inPlace (db: pg.PoolClient, row: Row, table: string, uid: string, oid: string): Promise<WriteResult | 'stale' | undefined> {
    const values = [row.id, row.name, row.age, row.country]
    const [found] = (await this.query<{ sameTable: boolean, matched: boolean }>(db, this.text(`read ${table}`, () =>
      `SELECT o.tableoid = $5::oid AS "sameTable", (o.name, o.age, o.country) = ($2::text, $3::integer, $4::text) AS matched
       FROM ONLY ${this.table(table)} AS o WHERE o.id = $1`),
    [...values, oid]
    )).rows
    if (found === undefined) return undefined
    if (!found.sameTable) return 'stale'
    if (found.matched) return { kind: 'done' }
    // An update never brings back a row that a finalize deleted: what it does not write is placed, under the row's lock.
    const [updated] = (await this.query<{ written: number, kept: boolean }>(db, this.text(`update ${table}`, () =>
      `WITH written AS (
         UPDATE ONLY ${this.table(table)} AS t SET name = $2, age = $3, country = $4
         WHERE t.id = $1 AND t.tableoid = $6::oid AND NOT ${this.finalized()}
           AND (t.name, t.age, t.country) IS DISTINCT FROM ($2::text, $3::integer, $4::text)
         RETURNING t.name, t.age, t.country
       )
       SELECT count(*)::int AS written, coalesce(bool_and((name, age, country) = ($2::text, $3::integer, $4::text)), false) AS kept FROM written`),
    [...values, uid, oid]
    )).rows
    if (updated === undefined || updated.written === 0) return undefined
    return updated.kept ? { kind: 'done' } : this.notKept(table)
  }

  /**
   * Places the row: after the row's advisory lock, so that the statement sees what an earlier placement or finalize
   * committed (a tombstone, a copy elsewhere), one statement upserts it and deletes it from the other tables that may
   * hold it, when they are the ones it expected. One round trip, unless those tables changed since the last placement.
   */
  private async place (db: pg.PoolClient, row: Row, table: string, uid: string, oid: string): Promise<WriteResult | 'stale'> {
    for (let attempt = 1; ; attempt++) {
      const [, placement] = await this.batch(db, [lockRow(row.id), this.placement(row, table, uid, oid, this.tables.filter((other) => other !== table))])
      const report = placement?.rows[0] as Placement
      this.tables = report.tables
      if (report.expected || report.finalized || !report.sameTable) return this.placed(report, row, table, uid)
      if (attempt === ATTEMPTS_FOR_TABLES) return this.tablesKeptChanging()
    }
  }

  /**
   * The statement of a placement, after the advisory lock. $7 is the table's qualified name: the write is made only if
   * it still names the table found fit. $8..$10 select the tables that may hold a copy; the row is written, and
   * deleted from `others`, only if those are the tables other than `table` ($11). It reports them all.
   */
  private placement (row: Row, table: string, uid: string, oid: string, others: readonly string[]): Query {
    const text = this.text(`place ${table} ${others.join(' ')}`, () =>
      `WITH guard AS (SELECT to_regclass($7) = $6::oid AS "sameTable", ${this.finalized()} AS finalized),
       tables AS (${rowTablesQuery('$8', '$9', '$10')}),
       expected AS (SELECT ARRAY(SELECT relname FROM tables WHERE relname <> $11 ORDER BY relname)::text[] = $12::text[] AS expected),
       go AS (SELECT 1 FROM guard, expected WHERE guard."sameTable" AND NOT guard.finalized AND expected.expected),
       written AS (
         INSERT INTO ${this.table(table)} AS t (id, name, age, country)
         SELECT $1, $2, $3, $4 FROM go
         ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country
         WHERE (t.name, t.age, t.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)
         RETURNING t.name, t.age, t.country
       )${others.map((other, i) => `,
       deleted_${i} AS (DELETE FROM ONLY ${this.table(other)} WHERE id = $1 AND EXISTS (SELECT 1 FROM go))`).join('')}
       SELECT guard."sameTable", guard.finalized, expected.expected,
         (SELECT count(*) FROM written)::int AS written,
         EXISTS (SELECT 1 FROM written w WHERE (w.name, w.age, w.country) = ($2::text, $3::integer, $4::text)) AS kept,
         EXISTS (SELECT 1 FROM ONLY ${this.table(table)} o WHERE o.id = $1 AND (o.name, o.age, o.country) = ($2::text, $3::integer, $4::text)) AS matched,
         ARRAY(SELECT relname FROM tables ORDER BY relname)::text[] AS tables
       FROM guard, expected`)
    return [text, [row.id, row.name, row.age, row.country, uid, oid, this.table(table), this.schema, TABLE_NAME_PATTERN, this.allowlist, table, others]]
  }

  /**
   * The statement of a finalize, after the advisory lock: when the tables that may hold the row are `tables`, it
   * tombstones the uid and, if the uid was not tombstoned before, deletes the row from each of them. It reports them all.
   * A repeated finalize (Metacontroller calls finalize again while another finalizer holds the object) refreshes its
   * tombstone, and the expired ones it purges never include its own: each statement sees the table as it was before
   * it, so a purge and a refresh of the same tombstone in one statement would leave it deleted.
   * Without a tombstones table (PG_AUTO_CREATE_TABLES=false) no sync can write at all, so none can undo the delete.
   */
  private finalize (id: string, uid: string, tombstones: boolean, tables: readonly string[]): Query {
    const text = this.text(`finalize ${String(tombstones)} ${tables.join(' ')}`, () =>
      `WITH tables AS (${rowTablesQuery('$1', '$2', '$3')}),
       expected AS (SELECT ARRAY(SELECT relname FROM tables ORDER BY relname)::text[] = $4::text[] AS expected)${tombstones
        ? `,
       previous AS (SELECT 1 FROM ${this.tombstones} WHERE uid = $6),
       expired AS (DELETE FROM ${this.tombstones} WHERE finalized_at < now() - make_interval(secs => ${TOMBSTONE_RETENTION_SECONDS}) AND uid <> $6),
       tombstone AS (INSERT INTO ${this.tombstones} (uid, id) SELECT $6, $5 FROM expected WHERE expected ON CONFLICT (uid) DO UPDATE SET finalized_at = now())`
        : ''}${tables.map((table, i) => `,
       deleted_${i} AS (DELETE FROM ONLY ${this.table(table)} WHERE id = $5 AND EXISTS (SELECT 1 FROM expected WHERE expected)${tombstones ? ' AND NOT EXISTS (SELECT 1 FROM previous)' : ''})`).join('')}
       SELECT expected, ARRAY(SELECT relname FROM tables ORDER BY relname)::text[] AS tables FROM expected`)
    // PostgreSQL refuses a value for a parameter that the text does not use: the id ($5) and uid ($6) go only where used.
    const used = tombstones ? 6 : tables.length > 0 ? 5 : 4
    return [text, [this.schema, TABLE_NAME_PATTERN, this.allowlist, tables, id, uid].slice(0, used)]
  }

  /** What a placement's report means for the sync; 'stale' when the table is no longer the one found fit. */
  private placed (report: Placement, row: Row, table: string, uid: string): WriteResult | 'stale' {
    if (report.finalized) {
      return refused('RowDeleted', `row ${JSON.stringify(row.id)} was deleted when this PostgresWriter (uid ${uid}) was finalized: a sync that arrives after its finalize writes nothing`)
    }
    if (!report.sameTable) return 'stale'
    if (report.written > 0 ? report.kept : report.matched) return { kind: 'done' }
    return this.notKept(table)
  }

  private notKept (table: string): Failed {
    return refused('TableIncompatible', `${this.schema}.${table} did not keep the row as written (a trigger, rule or policy on it changes or drops rows): PostgresWriter needs the row stored as it sends it, to know that it matches the spec`)
  }
}

/** Two hooks creating the same table at once: one wins, the other sees a duplicate in the catalog. */
function ignoreConcurrentCreate (error: unknown): void {
  if (!['23505', '42P06', '42P07', '42710'].includes(sqlState(error) ?? '')) throw error
}
