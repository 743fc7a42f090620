import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import { markBroken, mustDiscard, preparedStatementFailed, remembered, runBatch, statement, withinDeadline, type Postgres, type StatementDefinition, type StatementResult, type Value } from '../database/index.js'
import { classifyFailure, ignoreConcurrentCreate, refused, runAgainAfter, sqlState, tableMissing } from './failures.js'
import type { PostgresWriterSettings } from './settings.js'
import { isSqlIdentifier } from './sql-identifier.js'
import { TABLE_NAME_PATTERN } from './resource.js'
import {
  createSchema, earlierRowTables, finalizeDeleting, finalizeOrphaning, hookTablesDdl, inspectTable, lockHookTables, lockRow, migrationDdl,
  placeRow, placeRowAlone, qualified, readRow, rowTableDdl, updateRow
} from './statements.js'
import { RETRY_UNAVAILABLE_SECONDS, type Failed, type FinalizePlan, type FinalizeResult, type Row, type SyncPlan, type WriteResult } from './sync.js'
import { PLACEMENTS_TABLE, tableVerdict, TOMBSTONES_TABLE, type HookTables, type Relation } from './tables.js'

/**
 * The PostgreSQL side of PostgresWriter: when to run which statement (statements.ts), and what their answers mean.
 * Each hook call runs on one connection, within PG_HOOK_DEADLINE (database/deadline.ts).
 */

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

/** What the catalog says of a table and of the hook's own tables (statements.ts, inspectTable). */
interface Inspected {
  hookTables: HookTables
  /** The columns of the hook's tables that this version reads and that they lack, as `table.column`. */
  hookColumnsMissing: string[]
  relation: Relation | undefined
}

/**
 * A statement's text and its values, as the batch sends them. The values are written out field by field: V8 builds an
 * object literal that spreads the row and adds fields on a slow path (6.5 µs, against 0.1 µs written out).
 */
interface Query { text: string, values: Value[] }

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

  constructor (private readonly io: Postgres, private readonly settings: PostgresWriterSettings) {}

  private get schema (): string {
    return this.settings.schema
  }

  private get placements (): string {
    return qualified(this.schema, PLACEMENTS_TABLE)
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
          changed = runAgainAfter(error, attempt === ATTEMPTS_FOR_TABLES)
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
          const [, finalize] = await this.batch(db, [this.query(lockRow, undefined, { id }), this.finalize(plan, expected)])
          const report = finalize?.rows[0] as Finalized
          if (report.expected) return { kind: 'done', releaseToken: report.releaseToken ?? undefined, tables: report.tables }
          expected = learnt(expected, report.tables)
        } catch (error) {
          changed = runAgainAfter(error, attempt === ATTEMPTS_FOR_TABLES)
          // One of the tables it expected is gone, or the hook's own tables changed: the next run expects none.
          expected = []
          this.hookTablesCurrent = false
          const ready = await this.hookTablesReady(db)
          if (ready !== 'ready') {
            if (ready === 'none') throw error
            return ready
          }
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
      const ready = await this.prepareHookTables(db, inspected)
      if (ready !== 'ready') return ready === 'none' ? refused('TableMissing', this.hookTablesMissing()) : ready
    }
    if (inspected.relation === undefined && this.settings.autoCreateTables) {
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
    const inspected = await this.inspect(db, TOMBSTONES_TABLE)
    const ready = inspected.hookTables === 'current' ? 'ready' : await this.prepareHookTables(db, inspected)
    if (ready === 'ready') this.hookTablesCurrent = true
    return ready
  }

  /**
   * Creates the hook's missing tables, or migrates an earlier version's, when PG_AUTO_CREATE_TABLES allows it. Tables
   * another version laid out otherwise are left as they are: this version writes nothing on them.
   */
  private async prepareHookTables (db: pg.PoolClient, inspected: Inspected): Promise<'ready' | 'none' | Failed> {
    // One catalog read can race another call's creation of these tables and see a table without its columns: the
    // layout is judged other only when a second read, after that creation committed, sees it too.
    const { hookTables: state, hookColumnsMissing } = inspected.hookTables === 'other' ? await this.inspect(db, TOMBSTONES_TABLE) : inspected
    if (state === 'current') return 'ready'
    if (state === 'other') return refused('TableIncompatible', this.otherLayout(hookColumnsMissing))
    if (!this.settings.autoCreateTables) return state === 'missing' ? 'none' : refused('TableMissing', await this.migrationNeeded(db))
    if (state === 'missing') {
      await this.create(db, hookTablesDdl(this.schema))
      return 'ready'
    }
    await this.migrate(db)
    return 'ready'
  }

  /**
   * Migrates the tables of a version that recorded no placements (statements.ts, migrationDdl), once: replicas that
   * start together take turns on a transaction lock, and each looks again once it holds it.
   */
  private async migrate (db: pg.PoolClient): Promise<void> {
    await db.query('BEGIN')
    try {
      const lock = this.query(lockHookTables, undefined, { schema: this.schema })
      await db.query(lock.text, lock.values)
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
    const { rows } = await this.run1<{ relname: string }>(db, this.query(earlierRowTables, undefined, { schema: this.schema, tablePattern: TABLE_NAME_PATTERN }))
    return rows.map((row) => row.relname).filter(isSqlIdentifier)
  }

  private hookTablesMissing (): string {
    return hookTablesMissing(this.schema)
  }

  private otherLayout (missing: readonly string[]): string {
    return `the hook's own tables in schema ${this.schema} are not laid out as this version of the hook reads them (${missing.join(', ')} missing): another version changed them, most likely a later one that this server was rolled back from; run that version again, or first the way back to this version's tables that its documentation gives (docs/postgres-writer.md); nothing was written`
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

  private async inspect (db: pg.PoolClient, table: string): Promise<Inspected> {
    const [row] = (await this.run1<Relation & Omit<Inspected, 'relation'> & { oid: string | null }>(db, this.query(inspectTable, undefined, { schema: this.schema, table }))).rows
    return { hookTables: row?.hookTables ?? 'missing', hookColumnsMissing: row?.hookColumnsMissing ?? [], relation: row?.oid === null || row === undefined ? undefined : row }
  }

  /**
   * Runs `queries` in one round trip, as one transaction (database/pg-internals.ts), named when PG_PREPARED_STATEMENTS allows
   * (database/prepared-statements.ts).
   */
  private async batch (db: pg.PoolClient, queries: readonly Query[]): Promise<Array<StatementResult<pg.QueryResultRow>>> {
    return await runBatch(db, queries.map(({ text, values }) => statement(db, this.io.preparedStatements, text, values)))
  }

  private async run1<R extends pg.QueryResultRow> (db: pg.PoolClient, query: Query): Promise<StatementResult<R>> {
    const [result] = await this.batch(db, [query])
    return result as StatementResult<R>
  }

  /** `definition` for `shape` (its text built once) with `values`. */
  private query<Parameter extends string, Shape> (definition: StatementDefinition<Parameter, Shape>, shape: Shape, values: Readonly<Record<Parameter, Value>>): Query {
    const text = remembered(this.texts, MAX_TEXTS, `${definition.name} ${JSON.stringify(shape)}`, () => definition.text(shape))
    return { text, values: definition.values(values) }
  }

  /** Runs DDL statements; another hook creating the same at once is no error. */
  private async create (db: pg.PoolClient, statements: string[]): Promise<void> {
    await db.query(createSchema(this.schema)).catch(ignoreConcurrentCreate)
    for (const statement of statements) await db.query(statement).catch(ignoreConcurrentCreate)
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
    const shape = { schema: this.schema, table }
    const values = { id: row.id, name: row.name, age: row.age, country: row.country, uid, oid, table }
    const [found] = (await this.run1<{ sameTable: boolean, matched: boolean, settled: boolean }>(db, this.query(readRow, shape, values))).rows
    if (found === undefined || !found.settled) return undefined
    if (!found.sameTable) return 'stale'
    if (found.matched) return { kind: 'done', wrote: 'nothing' }
    // An update never brings back a row that a finalize deleted: what it does not write is placed, under the row's lock.
    const [updated] = (await this.run1<{ written: number, kept: boolean }>(db, this.query(updateRow, shape, values))).rows
    if (updated === undefined || updated.written === 0) return undefined
    return updated.kept ? { kind: 'done', wrote: 'updated' } : this.notKept(table)
  }

  /**
   * Places the row: after the row's advisory lock, so that the statement sees what an earlier placement or finalize
   * committed (a tombstone, a record elsewhere), one statement upserts it, deletes it from the other tables recorded as
   * holding it when each is one it expected (`others`), and records it here, for this object. One round trip, unless
   * a table the status did not name holds it. When it expects no other table, a shorter statement tries first, which
   * writes only when no other table holds the row and no tombstone stops it: an object's first sync.
   */
  private async place (db: pg.PoolClient, placing: Placing, others: readonly string[]): Promise<WriteResult | 'stale'> {
    if (others.length === 0) {
      const alone = await this.placeAlone(db, placing)
      if (alone !== undefined) return alone
    }
    let expected = others
    for (let attempt = 1; attempt <= ATTEMPTS_FOR_TABLES; attempt++) {
      let report: Placement
      try {
        const [, placement] = await this.batch(db, [this.query(lockRow, undefined, { id: placing.row.id }), this.placement(placing, expected)])
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
   * The placement of a row that nothing else holds or stops (statements.ts, placeRowAlone): what it did, or undefined
   * when something does, and the whole placement must run.
   */
  private async placeAlone (db: pg.PoolClient, { row, table, uid, oid }: Placing): Promise<WriteResult | 'stale' | undefined> {
    const values = { id: row.id, name: row.name, age: row.age, country: row.country, uid, oid, qualifiedTable: qualified(this.schema, table), table }
    const [, placement] = await this.batch(db, [this.query(lockRow, undefined, { id: row.id }), this.query(placeRowAlone, { schema: this.schema, table }, values)])
    const report = placement?.rows[0] as { sameTable: boolean, placed: boolean, written: number, kept: boolean, before: boolean | null }
    if (!report.sameTable) return 'stale'
    if (!report.placed) return undefined
    return this.outcome(table, report.written, report.kept, report.before)
  }

  /** The statement of a placement (statements.ts, placeRow), expecting the row in `others` besides `table`. */
  private placement ({ row, table, uid, oid, releaseToken }: Placing, others: readonly string[]): Query {
    return this.query(placeRow, { schema: this.schema, table, others }, {
      id: row.id,
      name: row.name,
      age: row.age,
      country: row.country,
      uid,
      oid,
      qualifiedTable: qualified(this.schema, table),
      table,
      tables: others,
      schema: this.schema,
      tablePattern: TABLE_NAME_PATTERN,
      releaseToken: releaseToken ?? null
    })
  }

  /**
   * The statement of a finalize (statements.ts, finalizeDeleting or finalizeOrphaning), expecting the row in `tables`.
   * A released object's tombstone keeps the token its first finalize gave it: the status Metacontroller wrote holds it.
   */
  private finalize ({ id, uid, deleting, policy }: FinalizePlan, tables: readonly string[]): Query {
    const [schema, tablePattern, releaseToken] = [this.schema, TABLE_NAME_PATTERN, randomUUID()]
    return policy === 'Delete'
      ? this.query(finalizeDeleting, { schema, tables }, { id, uid, schema, tablePattern, deleting: String(deleting), releaseToken, tables })
      : this.query(finalizeOrphaning, { schema }, { id, uid, schema, tablePattern, deleting: String(deleting), releaseToken })
  }

  /** What a placement's report means for the sync; 'stale' when the table is no longer the one found fit. */
  private placed (report: Placement, { row, table, uid }: Placing): WriteResult | 'stale' {
    if (report.finalized) return rowDeleted(row.id, uid, report.releaseToken)
    if (!report.sameTable) return 'stale'
    return this.outcome(table, report.written, report.kept, report.existed ? report.matched : null)
  }

  /**
   * What a placement that went ahead did: `written` rows, the one written read back as sent (`kept`), over the row as
   * it was before (`before`: null when there was none, else whether it matched the spec).
   */
  private outcome (table: string, written: number, kept: boolean, before: boolean | null): WriteResult {
    if (written > 0 ? kept : before === true) return { kind: 'done', wrote: written === 0 ? 'nothing' : before === null ? 'inserted' : 'updated' }
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

/** Why a write found the hook's own tables missing, with PG_AUTO_CREATE_TABLES off, and how to create them. */
export function hookTablesMissing (schema: string): string {
  return `the hook's own tables are missing from schema ${schema}: they record where each row was written, and the uid of every finalized PostgresWriter, so that no call that arrives after the finalize writes its row again; create them (${ddlText(hookTablesDdl(schema))}) and grant the hook's user SELECT, INSERT, UPDATE and DELETE on them, or set PG_AUTO_CREATE_TABLES=true; nothing was written`
}

/**
 * A write of an object that was finalized: deleted (no `releaseToken`), or released when it stopped matching the
 * DecoratorController's selector, whose sync carries a status from before that.
 */
export function rowDeleted (id: string, uid: string, releaseToken: string | null): Failed {
  if (releaseToken !== null) {
    return {
      kind: 'failed',
      reason: 'RowDeleted',
      message: `row ${JSON.stringify(id)} was deleted when this PostgresWriter stopped matching the selector of its DecoratorController, and this sync carries a status from before that, so it may have been sent before: it wrote nothing; the next sync carries this answer's release token, and writes the row`,
      retryAfterSeconds: RETRY_UNAVAILABLE_SECONDS,
      releaseToken
    }
  }
  return refused('RowDeleted', `row ${JSON.stringify(id)} was deleted when this PostgresWriter (uid ${uid}) was finalized: a sync that arrives after its finalize writes nothing`)
}

/** DDL statements as one line of SQL, for a message. */
function ddlText (statements: readonly string[]): string {
  return statements.map((statement) => `${statement.replace(' IF NOT EXISTS', '')};`).join(' ')
}
