import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { runBatch, type StatementResult, type Value } from '../database/pg-internals.js'
import { DeadlineExceeded, withinDeadline } from '../database/deadline.js'
import type { PostgresIo } from '../database/pool.js'
import { markBroken, mustDiscard, preparedStatementFailed, remembered, statement } from '../database/statements.js'
import { isSqlIdentifier } from './sql-identifier.js'
import { TABLE_NAME_PATTERN } from './resource.js'
import { RETRY_REFUSED_SECONDS, RETRY_UNAVAILABLE_SECONDS, type Failed, type FinalizePlan, type FinalizeResult, type Row, type SyncPlan, type WriteResult } from './sync.js'
import {
  earlierRowTablesQuery, hookTablesDdl, inspectStatement, migrationDdl, PLACEMENTS_TABLE, qualified, quote, recordedTablesQuery,
  ROW_SHAPE, rowTableDdl, tableVerdict, TOMBSTONE_RETENTION_SECONDS, TOMBSTONES_TABLE, type HookTables, type Relation
} from './tables.js'

/**
 * The PostgreSQL side of PostgresWriter. Every value travels as a parameter; table and schema names reach SQL
 * only after sync.ts validated them as identifiers, and are quoted here. Each hook call runs on one connection,
 * within PG_HOOK_DEADLINE (database/deadline.ts).
 */

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

/**
 * When a run of a placement or finalize failed because a table changed under it, what the error said: the call runs
 * again, or after its last run reports that the tables kept changing (retried soon). Any other error is thrown, to be
 * reported as what it is, and so is a change other than a dropped table at the last run.
 */
function runAgainAfter (error: unknown, attempt: number): string {
  if (!tableChanged(error) || (attempt === ATTEMPTS_FOR_TABLES && sqlState(error) !== '42P01')) throw error
  return ` (${(error as Error).message})`
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
  /** The object's uid is tombstoned: it was finalized, and this sync does not carry the token that released it. */
  finalized: boolean
  /** The tombstone's release token, if the object was released rather than deleted. */
  releaseToken: string | null
  /** Every other table recorded as holding the row was one the statement could delete it from; otherwise it wrote nothing. */
  expected: boolean
  /** Rows the statement wrote, and whether the row written reads back as sent. */
  written: number
  kept: boolean
  /** Before the statement, the table held the row (`existed`), as the spec says (`matched`). */
  existed: boolean
  matched: boolean
  /** The other tables recorded as holding the row. */
  tables: string[]
}

/** A placement's row and table (found fit, with its OID), the object, and the release token its status carries. */
interface Placing {
  row: Row
  table: string
  uid: string
  oid: string
  releaseToken: string | undefined
}

/** What a finalize reports. */
interface Finalized {
  /** Every table recorded as holding the object's row was one the statement could delete it from; otherwise it wrote nothing. */
  expected: boolean
  /** Those tables. */
  tables: string[]
  /** The tombstone's release token: set when the object was not being deleted. */
  releaseToken: string | null
}

type Query = readonly [text: string, values: readonly Value[]]

/** The row's advisory lock, held until the transaction ends: placements and finalizes of one row never interleave. */
const lockRow = (id: string): Query => ['SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [id]]

/**
 * How many times a placement or finalize runs when a table recorded as holding the row was not among those it
 * expected, or one of them was dropped while it ran. Each run adds the tables it found recorded to those it expects,
 * so a row that other calls move back and forth meanwhile makes no further run: only a table new to the call does.
 */
const ATTEMPTS_FOR_TABLES = 3

/** The tables a call expects to hold the row, with those a run found recorded: sorted, so that a set has one text. */
function learnt (expected: readonly string[], recorded: readonly string[]): string[] {
  return [...new Set([...expected, ...recorded.filter(isSqlIdentifier)])].sort()
}

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
  /** The hook's own tables were found current (tables.ts): they are looked at again after any write that fails. */
  private hookTablesCurrent = false
  /** Statement texts, each built once: by what it does, and on which tables. */
  private readonly texts = new Map<string, string>()

  constructor (private readonly io: PostgresIo) {}

  private get schema (): string {
    return this.io.policy.schema
  }

  private table (name: string): string {
    return qualified(this.schema, name)
  }

  private get tombstones (): string {
    return this.table(TOMBSTONES_TABLE)
  }

  private get placements (): string {
    return this.table(PLACEMENTS_TABLE)
  }

  /**
   * Makes the row equal the spec in `table`, writing nothing when it already does, unless the object was finalized.
   * When the last acknowledged sync put it in `table` (`previousTable`) and it is still there, recorded as this
   * object's, that takes one statement. Otherwise (first write, table change, an answer that never arrived, a
   * concurrent move) the row is placed: upserted, deleted from every other table recorded as holding it, and recorded
   * where it is now, in one transaction that holds the row's advisory lock.
   */
  async write ({ row, table, previousTable, uid, releaseToken }: Extract<SyncPlan, { kind: 'write' }>, arrivedAt: number): Promise<WriteResult> {
    return await this.run(arrivedAt, async (db) => {
      let changed = ''
      for (let attempt = 1; attempt <= ATTEMPTS_FOR_TABLES; attempt++) {
        const fit = await this.fitTable(db, table)
        if (typeof fit !== 'string') return fit
        try {
          const result = (previousTable === table ? await this.inPlace(db, row, table, uid, fit) : undefined) ??
            await this.place(db, { row, table, uid, oid: fit, releaseToken }, expectation(previousTable).filter((other) => other !== table))
          if (result !== 'stale') return result
        } catch (error) {
          changed = runAgainAfter(error, attempt)
        }
        // A table changed since it was looked at: look at it again, and say what is wrong with it, if anything.
        this.fit.delete(table)
        this.hookTablesCurrent = false
      }
      return this.tablesKeptChanging(changed)
    })
  }

  /**
   * Deletes the row from every table recorded as holding it for this object (none at all counts as deleted), and
   * tombstones the object's uid, in one statement after the row's advisory lock. A uid already tombstoned was finalized
   * before: its row is gone, and a row under the same id now belongs to an object created since under the same name,
   * which a late finalize must not delete. An object that is not `deleting` is released: its tombstone gets a token.
   * With deletionPolicy Orphan, the row and its record stay, the object's still: a new object of that id takes it over.
   */
  async delete (plan: FinalizePlan, arrivedAt: number): Promise<FinalizeResult> {
    const { id, previousTable, policy } = plan
    return await this.run(arrivedAt, async (db) => {
      const ready = await this.hookTablesReady(db)
      // Without its tables the hook never wrote a row in this schema: there is nothing to delete.
      if (ready === 'none') return { kind: 'done', releaseToken: undefined, tables: [] }
      if (ready !== 'ready') return ready
      let expected = policy === 'Delete' ? expectation(previousTable) : []
      let changed = ''
      for (let attempt = 1; attempt <= ATTEMPTS_FOR_TABLES; attempt++) {
        try {
          const [, finalize] = await this.batch(db, [lockRow(id), this.finalize(plan, expected)])
          const report = finalize?.rows[0] as Finalized
          if (report.expected) return { kind: 'done', releaseToken: report.releaseToken ?? undefined, tables: report.tables }
          expected = learnt(expected, report.tables)
        } catch (error) {
          changed = runAgainAfter(error, attempt)
          // One of the tables it expected is gone, or the hook's own tables changed: the next run expects none.
          expected = []
          this.hookTablesCurrent = false
          if (await this.hookTablesReady(db) !== 'ready') throw error
        }
      }
      return this.tablesKeptChanging(changed)
    })
  }

  /**
   * Runs a hook call's work within its deadline, counted from its arrival; every failure becomes a result with a
   * reason. When a prepared statement fails (a pooler that lost it, a table whose new shape its plan cannot take), the
   * work runs once more with unnamed statements, and the connection is discarded at the end of the call. Each batch of
   * statements is a transaction of its own, so a failed one leaves none open.
   */
  private async run<Result extends WriteResult | FinalizeResult> (arrivedAt: number, work: (db: pg.PoolClient) => Promise<Result | Failed>): Promise<Result | Failed> {
    try {
      return await withinDeadline(this.io, async (db) => {
        try {
          return await work(db)
        } catch (error) {
          if (!preparedStatementFailed(error) || mustDiscard(db)) throw error
          markBroken(db)
          return await work(db)
        }
      }, arrivedAt)
    } catch (error) {
      return classifyFailure(error, this.io)
    }
  }

  /**
   * The OID of `table` once it is known to be an ordinary table that can hold the row, and the hook's own tables are
   * current (all created, or migrated, when PG_AUTO_CREATE_TABLES allows it); otherwise why not. Looked up in the
   * catalog the first time, then remembered: every write checks, in its own statement, that it still holds.
   */
  private async fitTable (db: pg.PoolClient, table: string): Promise<string | Failed> {
    const known = this.fit.get(table)
    if (known !== undefined && this.hookTablesCurrent && performance.now() - known.at < FIT_FOR_MS) return known.oid
    let inspected = await this.inspect(db, table)
    if (inspected.hookTables !== 'current') {
      const ready = await this.prepareHookTables(db, inspected.hookTables)
      if (ready !== 'ready') return ready === 'none' ? refused('TableMissing', this.hookTablesMissing()) : ready
    }
    if (inspected.relation === undefined && this.io.policy.autoCreateTables) {
      await this.create(db, [rowTableDdl(this.schema, table)])
      inspected = await this.inspect(db, table)
    }
    if (inspected.relation === undefined) return tableMissing(`relation "${this.schema}.${table}" does not exist`)
    const verdict = tableVerdict(this.schema, table, inspected.relation)
    if (verdict.kind === 'unfit') return refused(verdict.reason, verdict.message)
    this.fit.set(table, { oid: verdict.oid, at: performance.now() })
    this.hookTablesCurrent = true
    return verdict.oid
  }

  /**
   * Whether the hook's own tables are current: `ready`; `none` when they are missing and PG_AUTO_CREATE_TABLES=false;
   * or why they cannot be made so.
   */
  private async hookTablesReady (db: pg.PoolClient): Promise<'ready' | 'none' | Failed> {
    if (this.hookTablesCurrent) return 'ready'
    const { hookTables } = await this.inspect(db, TOMBSTONES_TABLE)
    const ready = hookTables === 'current' ? 'ready' : await this.prepareHookTables(db, hookTables)
    if (ready === 'ready') this.hookTablesCurrent = true
    return ready
  }

  /** Creates the hook's missing tables, or migrates an earlier version's, when PG_AUTO_CREATE_TABLES allows it. */
  private async prepareHookTables (db: pg.PoolClient, state: Exclude<HookTables, 'current'>): Promise<'ready' | 'none' | Failed> {
    if (!this.io.policy.autoCreateTables) return state === 'missing' ? 'none' : refused('TableMissing', await this.migrationNeeded(db))
    if (state === 'missing') {
      await this.create(db, hookTablesDdl(this.schema))
      return 'ready'
    }
    await this.migrate(db)
    return 'ready'
  }

  /**
   * Migrates the tables of a version that recorded no placements (tables.ts, migrationDdl), once: replicas that
   * start together take turns on a transaction lock, and each looks again once it holds it.
   */
  private async migrate (db: pg.PoolClient): Promise<void> {
    await db.query('BEGIN')
    try {
      await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`postgres-writer tables ${this.schema}`])
      if ((await this.inspect(db, TOMBSTONES_TABLE)).hookTables === 'earlier') {
        for (const statement of migrationDdl(this.schema, await this.earlierRowTables(db))) await db.query(statement)
      }
      await db.query('COMMIT')
    } catch (error) {
      await db.query('ROLLBACK').catch(() => {})
      throw error
    }
  }

  private async earlierRowTables (db: pg.PoolClient): Promise<string[]> {
    const result = await db.query<{ relname: string }>(earlierRowTablesQuery, [this.schema, TABLE_NAME_PATTERN])
    return result.rows.map((row) => row.relname).filter(isSqlIdentifier)
  }

  private hookTablesMissing (): string {
    return `the hook's own tables are missing from schema ${this.schema}: they record where each row was written, and the uid of every finalized PostgresWriter, so that no call that arrives after the finalize writes its row again; create them (${ddlText(hookTablesDdl(this.schema))}) and grant the hook's user SELECT, INSERT, UPDATE and DELETE on them, or set PG_AUTO_CREATE_TABLES=true; nothing was written`
  }

  private async migrationNeeded (db: pg.PoolClient): Promise<string> {
    const statements = migrationDdl(this.schema, await this.earlierRowTables(db))
    return `the hook's tables in schema ${this.schema} are those of an earlier version, which did not record where it wrote each row: migrate them in one transaction (BEGIN; ${ddlText(statements)} COMMIT;) and grant the hook's user SELECT, INSERT, UPDATE and DELETE on ${this.placements}, or set PG_AUTO_CREATE_TABLES=true; nothing was written`
  }

  private tablesKeptChanging (changed: string): Failed {
    return {
      kind: 'failed',
      reason: 'DatabaseUnavailable',
      message: `the tables of schema ${this.schema} that hold the row changed ${ATTEMPTS_FOR_TABLES} times while the call ran${changed}; retrying in ${RETRY_UNAVAILABLE_SECONDS}s`,
      retryAfterSeconds: RETRY_UNAVAILABLE_SECONDS
    }
  }

  private async inspect (db: pg.PoolClient, table: string): Promise<{ hookTables: HookTables, relation: Relation | undefined }> {
    const [row] = (await this.query<Relation & { hookTables: HookTables, oid: string | null }>(db, inspectStatement, [this.schema, table])).rows
    return { hookTables: row?.hookTables ?? 'missing', relation: row?.oid === null || row === undefined ? undefined : row }
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

  /** Whether the uid ($5) is tombstoned: finalized, or released. */
  private tombstoned (): string {
    return `EXISTS (SELECT 1 FROM ${this.tombstones} WHERE object_uid = $5)`
  }

  /**
   * The row where the last acknowledged sync put it: read, and updated when it differs, as long as it is recorded there
   * as this object's and the object has no tombstone (so that a late sync of a finalized object stays off the row of
   * an object created since under the same name; a released object's sync is placed, which lifts the tombstone). An
   * unchanged resync, the common call, is one read of one row. The table is known by the OID of the table the row
   * comes from. Undefined when the row must be placed: it is not there, not recorded as this object's, or was not
   * updated.
   */
  private async inPlace (db: pg.PoolClient, row: Row, table: string, uid: string, oid: string): Promise<WriteResult | 'stale' | undefined> {
    const values = [row.id, row.name, row.age, row.country, uid]
    const recorded = `EXISTS (SELECT 1 FROM ${this.placements} r WHERE r.id = $1 AND r.table_name = $7 AND r.uid = $5) AND NOT ${this.tombstoned()}`
    const [found] = (await this.query<{ sameTable: boolean, matched: boolean, settled: boolean }>(db, this.text(`read ${table}`, () =>
      `SELECT o.tableoid = $6::oid AS "sameTable", (o.name, o.age, o.country) = ($2::text, $3::integer, $4::text) AS matched, ${recorded} AS settled
       FROM ONLY ${this.table(table)} AS o WHERE o.id = $1`),
    [...values, oid, table]
    )).rows
    if (found === undefined || !found.settled) return undefined
    if (!found.sameTable) return 'stale'
    if (found.matched) return { kind: 'done', wrote: 'nothing' }
    // An update never brings back a row that a finalize deleted: what it does not write is placed, under the row's lock.
    const [updated] = (await this.query<{ written: number, kept: boolean }>(db, this.text(`update ${table}`, () =>
      `WITH written AS (
         UPDATE ONLY ${this.table(table)} AS t SET name = $2, age = $3, country = $4
         WHERE t.id = $1 AND t.tableoid = $6::oid AND ${recorded}
           AND (t.name, t.age, t.country) IS DISTINCT FROM ($2::text, $3::integer, $4::text)
         RETURNING t.name, t.age, t.country
       )
       SELECT count(*)::int AS written, coalesce(bool_and((name, age, country) = ($2::text, $3::integer, $4::text)), false) AS kept FROM written`),
    [...values, oid, table]
    )).rows
    if (updated === undefined || updated.written === 0) return undefined
    return updated.kept ? { kind: 'done', wrote: 'updated' } : this.notKept(table)
  }

  /**
   * Places the row: after the row's advisory lock, so that the statement sees what an earlier placement or finalize
   * committed (a tombstone, a record elsewhere), one statement upserts it, deletes it from the other tables recorded as
   * holding it when each is one it expected (`others`), and records it here, for this object. One round trip, unless
   * a table the status did not name holds it.
   */
  private async place (db: pg.PoolClient, placing: Placing, others: readonly string[]): Promise<WriteResult | 'stale'> {
    let expected = others
    for (let attempt = 1; attempt <= ATTEMPTS_FOR_TABLES; attempt++) {
      let report: Placement
      try {
        const [, placement] = await this.batch(db, [lockRow(placing.row.id), this.placement(placing, expected)])
        report = placement?.rows[0] as Placement
      } catch (error) {
        // One of the tables it expected is gone: the next run, expecting none, learns which ones remain.
        if (sqlState(error) !== '42P01' || expected.length === 0) throw error
        expected = []
        continue
      }
      if (report.expected || report.finalized || !report.sameTable) return this.placed(report, placing)
      expected = learnt(expected, report.tables)
    }
    return this.tablesKeptChanging('')
  }

  /**
   * The statement of a placement, after the advisory lock. $7 is the table's qualified name: the write is made only if
   * it still names the table found fit. The row is written, deleted from those of `others` ($9) recorded as holding it,
   * and recorded in `table` ($8) alone, for this object, only if every other table recorded as holding it is among
   * `others`: a table of `others` that holds a row the hook did not write keeps it. It reports them. A tombstone
   * stops it, unless the sync carries the token ($12) that released the object: then it goes with the write.
   */
  private placement ({ row, table, uid, oid, releaseToken }: Placing, others: readonly string[]): Query {
    const text = this.text(`place ${table} ${others.join(' ')}`, () =>
      `WITH tombstone AS (SELECT release_token, NOT coalesce(release_token = $12, false) AS finalized FROM ${this.tombstones} WHERE object_uid = $5),
       guard AS (SELECT to_regclass($7) = $6::oid AS "sameTable", coalesce((SELECT finalized FROM tombstone), false) AS finalized),
       recorded AS (${recordedTablesQuery(this.placements, { id: '$1', schema: '$10', pattern: '$11', owner: 'r.table_name <> $8' })}),
       expected AS (SELECT ARRAY(SELECT table_name FROM recorded)::text[] <@ $9::text[] AS expected),
       go AS (SELECT 1 FROM guard, expected WHERE guard."sameTable" AND NOT guard.finalized AND expected.expected),
       written AS (
         INSERT INTO ${this.table(table)} AS t (id, name, age, country)
         SELECT $1, $2, $3, $4 FROM go
         ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country
         WHERE (t.name, t.age, t.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)
         RETURNING t.name, t.age, t.country
       )${others.map((other, i) => `,
       deleted_${i} AS (DELETE FROM ONLY ${this.table(other)} WHERE id = $1 AND EXISTS (SELECT 1 FROM go)
         AND EXISTS (SELECT 1 FROM recorded WHERE table_name = ($9::text[])[${i + 1}]))`).join('')},
       unrecorded AS (DELETE FROM ${this.placements} WHERE id = $1 AND table_name <> $8 AND EXISTS (SELECT 1 FROM go)),
       recorded_here AS (
         INSERT INTO ${this.placements} AS r (id, table_name, uid) SELECT $1, $8, $5 FROM go
         ON CONFLICT (id, table_name) DO UPDATE SET uid = EXCLUDED.uid WHERE r.uid IS DISTINCT FROM EXCLUDED.uid
       ),
       released AS (DELETE FROM ${this.tombstones} WHERE object_uid = $5 AND EXISTS (SELECT 1 FROM go))
       SELECT guard."sameTable", guard.finalized, (SELECT release_token FROM tombstone) AS "releaseToken", expected.expected,
         (SELECT count(*) FROM written)::int AS written,
         EXISTS (SELECT 1 FROM written w WHERE (w.name, w.age, w.country) = ($2::text, $3::integer, $4::text)) AS kept,
         EXISTS (SELECT 1 FROM ONLY ${this.table(table)} o WHERE o.id = $1) AS existed,
         EXISTS (SELECT 1 FROM ONLY ${this.table(table)} o WHERE o.id = $1 AND (o.name, o.age, o.country) = ($2::text, $3::integer, $4::text)) AS matched,
         ARRAY(SELECT table_name FROM recorded)::text[] AS tables
       FROM guard, expected`)
    return [text, [row.id, row.name, row.age, row.country, uid, oid, this.table(table), table, others, this.schema, TABLE_NAME_PATTERN, releaseToken ?? null]]
  }

  /**
   * The statement of a finalize, after the advisory lock: when each table recorded as holding the row for this object
   * (or for no object in particular: a row adopted from an earlier version) is among `tables`, it tombstones the uid
   * and, if the uid was not tombstoned before, deletes the row from each of them, and their records. It reports them.
   * With deletionPolicy Orphan it only tombstones the uid, and reports where the row stays.
   * A repeated finalize (Metacontroller calls finalize again while another finalizer holds the object) refreshes its
   * tombstone, and the expired ones it purges never include its own: each statement sees the table as it was before
   * it, so a purge and a refresh of the same tombstone in one statement would leave it deleted.
   */
  private finalize ({ id, uid, deleting, policy }: FinalizePlan, tables: readonly string[]): Query {
    const owned = '(r.uid = $2 OR r.uid IS NULL)'
    const deletes = policy === 'Delete'
    const text = this.text(`finalize ${policy} ${tables.join(' ')}`, () =>
      `WITH recorded AS (${recordedTablesQuery(this.placements, { id: '$1', schema: '$3', pattern: '$4', owner: owned })}),
       ${deletes
        ? `previous AS (SELECT 1 FROM ${this.tombstones} WHERE object_uid = $2),
       expected AS (SELECT ARRAY(SELECT table_name FROM recorded)::text[] <@ $7::text[] AS expected),
       go AS (SELECT 1 FROM expected WHERE expected AND NOT EXISTS (SELECT 1 FROM previous)),`
        : 'expected AS (SELECT true AS expected),'}
       expired AS (DELETE FROM ${this.tombstones} WHERE finalized_at < now() - make_interval(secs => ${TOMBSTONE_RETENTION_SECONDS}) AND object_uid <> $2),
       tombstone AS (
         INSERT INTO ${this.tombstones} AS t (object_uid, id, release_token) SELECT $2, $1, CASE WHEN $5::boolean THEN NULL ELSE $6::text END FROM expected WHERE expected
         ON CONFLICT (object_uid) DO UPDATE SET finalized_at = now(), release_token = CASE WHEN $5::boolean THEN NULL ELSE t.release_token END
         RETURNING t.release_token
       )${tables.map((table, i) => `,
       deleted_${i} AS (DELETE FROM ONLY ${this.table(table)} WHERE id = $1 AND EXISTS (SELECT 1 FROM go)
         AND EXISTS (SELECT 1 FROM recorded WHERE table_name = ($7::text[])[${i + 1}]))`).join('')}${deletes
        ? `,
       unrecorded AS (DELETE FROM ${this.placements} r WHERE r.id = $1 AND ${owned} AND EXISTS (SELECT 1 FROM go))`
        : ''}
       SELECT expected, ARRAY(SELECT table_name FROM recorded)::text[] AS tables, (SELECT release_token FROM tombstone) AS "releaseToken" FROM expected`)
    // A released object's tombstone keeps the token its first finalize gave it: the status Metacontroller wrote holds it.
    const values = [id, uid, this.schema, TABLE_NAME_PATTERN, String(deleting), randomUUID()]
    return [text, deletes ? [...values, tables] : values]
  }

  /** What a placement's report means for the sync; 'stale' when the table is no longer the one found fit. */
  private placed (report: Placement, { row, table, uid }: Placing): WriteResult | 'stale' {
    if (report.finalized && report.releaseToken !== null) {
      return {
        kind: 'failed',
        reason: 'RowDeleted',
        message: `row ${JSON.stringify(row.id)} was deleted when this PostgresWriter stopped matching the selector of its DecoratorController, and this sync carries a status from before that, so it may have been sent before: it wrote nothing; the next sync carries this answer's release token, and writes the row`,
        retryAfterSeconds: RETRY_UNAVAILABLE_SECONDS,
        releaseToken: report.releaseToken
      }
    }
    if (report.finalized) {
      return refused('RowDeleted', `row ${JSON.stringify(row.id)} was deleted when this PostgresWriter (uid ${uid}) was finalized: a sync that arrives after its finalize writes nothing`)
    }
    if (!report.sameTable) return 'stale'
    if (report.written > 0 ? report.kept : report.matched) return { kind: 'done', wrote: report.written === 0 ? 'nothing' : report.existed ? 'updated' : 'inserted' }
    return this.notKept(table)
  }

  private notKept (table: string): Failed {
    return refused('TableIncompatible', `${this.schema}.${table} did not keep the row as written (a trigger, rule or policy on it changes or drops rows): PostgresWriter needs the row stored as it sends it, to know that it matches the spec`)
  }
}

/**
 * The tables a call first expects to hold the row: the one its status names, where the last acknowledged sync put it.
 * The status is the client's word: a name reaches SQL only once it is an identifier, and the statement checks it
 * against the placements before it deletes anything.
 */
function expectation (previousTable: string | undefined): string[] {
  return previousTable !== undefined && isSqlIdentifier(previousTable) ? [previousTable] : []
}

/** DDL statements as one line of SQL, for a message. */
function ddlText (statements: readonly string[]): string {
  return statements.map((statement) => `${statement.replace(' IF NOT EXISTS', '')};`).join(' ')
}

/** Two hooks creating the same table at once: one wins, the other sees a duplicate in the catalog. */
function ignoreConcurrentCreate (error: unknown): void {
  if (!['23505', '42P06', '42P07', '42710'].includes(sqlState(error) ?? '')) throw error
}
