import { randomUUID } from 'node:crypto'
import { refused, runAgainAfter, sqlState } from './failures.js'
import { TABLE_NAME_PATTERN } from './resource.js'
import { query, type Query, type Session } from './session.js'
import { isSqlIdentifier } from './sql-identifier.js'
import {
  finalizeDeleting, finalizeOrphaning, lockRow, placeRow, placeRowAlone, qualified, readRow, updateRow,
  type FinalizeReport, type PlaceRowAloneReport, type PlaceRowReport, type ReadRowReport, type UpdateRowReport
} from './statements.js'
import { RETRY_UNAVAILABLE_SECONDS, type Failed, type FinalizePlan, type FinalizeResult, type Row, type SyncPlan, type WriteResult } from './sync.js'
import type { TableReadiness } from './table-readiness.js'

/**
 * PostgresWriter's row writes: which statement of statements.ts to send when, on a call's session, and what their
 * answers mean. The tables are made fit first (table-readiness.ts). The row store (row-store.ts) runs them on
 * PostgreSQL; the plan's forecast runs the same on a snapshot of the rows.
 */

/** A placement's row and table (found fit, with its OID), the object, and the release token its status carries. */
interface Placing {
  row: Row
  table: string
  uid: string
  oid: string
  releaseToken: string | undefined
}

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

export class RowWrites {
  constructor (private readonly schema: string, private readonly tables: TableReadiness) {}

  /**
   * Makes the row equal the spec in `table`, writing nothing when it already does, unless the object was finalized.
   * When the last acknowledged sync put it in `table` (`previousTable`) and it is still there, recorded as this
   * object's, that takes one statement. Otherwise (first write, table change, an answer that never arrived, a
   * concurrent move) the row is placed: upserted, deleted from every other table recorded as holding it, and recorded
   * where it is now, in one transaction that holds the row's advisory lock.
   */
  async write (session: Session, { row, table, previousTable, uid, releaseToken }: Extract<SyncPlan, { kind: 'write' }>): Promise<WriteResult> {
    let changed = ''
    for (let attempt = 1; attempt <= ATTEMPTS_FOR_TABLES; attempt++) {
      const fit = await this.tables.fitTable(session, table)
      if (typeof fit !== 'string') return fit
      try {
        const result = (previousTable === table ? await this.inPlace(session, row, table, uid, fit) : undefined) ??
          await this.place(session, { row, table, uid, oid: fit, releaseToken }, expectation(previousTable).filter((other) => other !== table))
        if (result !== 'stale') return result
      } catch (error) {
        changed = runAgainAfter(error, attempt === ATTEMPTS_FOR_TABLES)
      }
      // A table changed since it was looked at: look at it again, and say what is wrong with it, if anything.
      this.tables.changed(table)
    }
    return this.tablesKeptChanging(changed)
  }

  /**
   * Deletes the row from every table recorded as holding it for this object (none at all counts as deleted), and
   * tombstones the object's uid, in one statement after the row's advisory lock. A uid already tombstoned was finalized
   * before: its row is gone, and a row under the same id now belongs to an object created since under the same name,
   * which a late finalize must not delete. An object that is not `deleting` is released: its tombstone gets a token.
   * With deletionPolicy Orphan, the row and its record stay, the object's still: a new object of that id takes it over.
   */
  async delete (session: Session, plan: FinalizePlan): Promise<FinalizeResult> {
    const { id, previousTable, policy } = plan
    const ready = await this.tables.hookTablesReady(session)
    // Without its tables the hook never wrote a row in this schema: there is nothing to delete.
    if (ready === 'none') return { kind: 'done', releaseToken: undefined, tables: [] }
    if (ready !== 'ready') return ready
    let expected = policy === 'Delete' ? expectation(previousTable) : []
    let changed = ''
    for (let attempt = 1; attempt <= ATTEMPTS_FOR_TABLES; attempt++) {
      try {
        const [, [report] = []] = await session.batch([query(lockRow, undefined, { id }), this.finalize(plan, expected)]) as [unknown[], FinalizeReport[]]
        if (report?.expected === true) return { kind: 'done', releaseToken: report.releaseToken ?? undefined, tables: report.tables }
        expected = learnt(expected, report?.tables ?? [])
      } catch (error) {
        changed = runAgainAfter(error, attempt === ATTEMPTS_FOR_TABLES)
        // One of the tables it expected is gone, or the hook's own tables changed: the next run expects none.
        expected = []
        this.tables.changed()
        const ready = await this.tables.hookTablesReady(session)
        if (ready !== 'ready') {
          if (ready === 'none') throw error
          return ready
        }
      }
    }
    return this.tablesKeptChanging(changed)
  }

  private tablesKeptChanging (changed: string): Failed {
    return {
      kind: 'failed',
      reason: 'DatabaseUnavailable',
      message: `the tables of schema ${this.schema} that hold the row changed ${ATTEMPTS_FOR_TABLES} times while the call ran${changed}; retrying in ${RETRY_UNAVAILABLE_SECONDS}s`,
      retryAfterSeconds: RETRY_UNAVAILABLE_SECONDS
    }
  }

  /**
   * The row where the last acknowledged sync put it: read, and updated when it differs, as long as it is recorded there
   * as this object's and the object has no tombstone (so that a late sync of a finalized object stays off the row of
   * an object created since under the same name; a released object's sync is placed, which lifts the tombstone). An
   * unchanged resync, the common call, is one read of one row. The table is known by the OID of the table the row
   * comes from. Undefined when the row must be placed: it is not there, not recorded as this object's, or was not
   * updated.
   */
  private async inPlace (session: Session, row: Row, table: string, uid: string, oid: string): Promise<WriteResult | 'stale' | undefined> {
    const shape = { schema: this.schema, table }
    const values = { id: row.id, name: row.name, age: row.age, country: row.country, uid, oid, table }
    const [[found] = []] = await session.batch([query(readRow, shape, values)]) as ReadRowReport[][]
    if (found === undefined || !found.settled) return undefined
    if (!found.sameTable) return 'stale'
    if (found.matched) return { kind: 'done', wrote: 'nothing' }
    // An update never brings back a row that a finalize deleted: what it does not write is placed, under the row's lock.
    const [[updated] = []] = await session.batch([query(updateRow, shape, values)]) as UpdateRowReport[][]
    if (updated === undefined || updated.written === 0) return undefined
    return updated.kept ? { kind: 'done', wrote: 'updated' } : this.notKept(table)
  }

  /**
   * Places the row: after the row's advisory lock, so that the statement sees what an earlier placement or finalize
   * committed (a tombstone, a record elsewhere), one statement upserts it, deletes it from the other tables recorded as
   * holding it when each is one it expected (`others`), and records it here, for this object. One round trip, unless
   * a table the status did not name holds it. When it expects no other table, a shorter statement tries first, which
   * only inserts a row that is not there yet, when no other table holds it and no tombstone stops it: an object's
   * first sync.
   */
  private async place (session: Session, placing: Placing, others: readonly string[]): Promise<WriteResult | 'stale'> {
    if (others.length === 0) {
      const alone = await this.placeAlone(session, placing)
      if (alone !== undefined) return alone
    }
    let expected = others
    for (let attempt = 1; attempt <= ATTEMPTS_FOR_TABLES; attempt++) {
      let report: PlaceRowReport
      try {
        const [, [placement] = []] = await session.batch([query(lockRow, undefined, { id: placing.row.id }), this.placement(placing, expected)]) as [unknown[], PlaceRowReport[]]
        report = placement as PlaceRowReport
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
   * The placement of a new row that nothing else holds or stops (statements.ts, placeRowAlone): what it did, or
   * undefined when it inserted nothing (a row already there, a trigger that dropped it, or something that has a say),
   * and the whole placement must run.
   */
  private async placeAlone (session: Session, { row, table, uid, oid }: Placing): Promise<WriteResult | 'stale' | undefined> {
    const values = { id: row.id, name: row.name, age: row.age, country: row.country, uid, oid, qualifiedTable: qualified(this.schema, table), table }
    const [, [report] = []] = await session.batch([query(lockRow, undefined, { id: row.id }), query(placeRowAlone, { schema: this.schema, table }, values)]) as [unknown[], PlaceRowAloneReport[]]
    if (report === undefined || !report.sameTable) return 'stale'
    if (report.written === 0) return undefined
    return this.outcome(table, report.written, report.kept, null)
  }

  /** The statement of a placement (statements.ts, placeRow), expecting the row in `others` besides `table`. */
  private placement ({ row, table, uid, oid, releaseToken }: Placing, others: readonly string[]): Query {
    return query(placeRow, { schema: this.schema, table, others }, {
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
      ? query(finalizeDeleting, { schema, tables }, { id, uid, schema, tablePattern, deleting: String(deleting), releaseToken, tables })
      : query(finalizeOrphaning, { schema }, { id, uid, schema, tablePattern, deleting: String(deleting), releaseToken })
  }

  /** What a placement's report means for the sync; 'stale' when the table is no longer the one found fit. */
  private placed (report: PlaceRowReport, { row, table, uid }: Placing): WriteResult | 'stale' {
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

/**
 * A write of an object that was finalized: deleted (no `releaseToken`), or released when it stopped matching the
 * DecoratorController's selector, whose sync carries a status from before that.
 */
function rowDeleted (id: string, uid: string, releaseToken: string | null): Failed {
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
