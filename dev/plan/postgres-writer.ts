import type pg from 'pg'
import type { StatementDefinition, Value } from '../../hooks/database/index.js'
import type { Controller } from '../../hooks/framework/controller.js'
import { postgresWriter, type Rows } from '../../hooks/postgres-writer/index.js'
import { TABLE_NAME_PATTERN } from '../../hooks/postgres-writer/resource.js'
import { RowWrites } from '../../hooks/postgres-writer/rows.js'
import type { Ddl, Query, Session } from '../../hooks/postgres-writer/session.js'
import type { PostgresWriterSettings } from '../../hooks/postgres-writer/settings.js'
import { isSqlIdentifier } from '../../hooks/postgres-writer/sql-identifier.js'
import {
  finalizeDeleting, finalizeOrphaning, inspectTable, lockRow, placeRow, placeRowAlone, readPlacements, readRow, readRows, readTombstones, updateRow,
  type FinalizeReport, type InspectReport, type PlaceRowAloneReport, type PlaceRowReport, type ReadRowReport, type UpdateRowReport
} from '../../hooks/postgres-writer/statements.js'
import type { FinalizePlan, FinalizeResult, Row, SyncPlan, WriteResult } from '../../hooks/postgres-writer/sync.js'
import { TableReadiness } from '../../hooks/postgres-writer/table-readiness.js'
import { createdRelation, TOMBSTONES_TABLE, type HookTables, type Relation } from '../../hooks/postgres-writer/tables.js'
import type { Json } from './kube-api.js'

/**
 * What PostgresWriter's hooks would write, without writing. The rows, the hook's records of where it wrote them and
 * its tombstones are read for each page of PostgresWriters planned, in one read-only transaction. Then each sync or
 * finalize runs PostgresWriter's own row writes and table readiness (hooks/postgres-writer/rows.ts,
 * table-readiness.ts), on a session that answers each of their statements (statements.ts) from that snapshot instead
 * of PostgreSQL: it says what each would do to a row, and keeps the snapshot as it would leave the database.
 */

/** What a statement of the row store would do: to a row (its columns by name), or to the schema. */
export type RowEffect =
  | { action: 'createHookTables', schema: string }
  | { action: 'createTable', table: string }
  | { action: 'insert', table: string, id: string, columns: Record<string, { to: unknown }> }
  | { action: 'update', table: string, id: string, columns: Record<string, { from: unknown, to: unknown }> }
  | { action: 'delete', table: string, id: string }

type Columns = Omit<Row, 'id'>
const COLUMNS = ['name', 'age', 'country'] as const

interface TableState {
  /** What the catalog said of the name (inspectTable); undefined: no such relation. */
  relation: Relation | undefined
  /** The rows of the planned ids it holds; a row whose table lacks a column has it undefined. */
  rows: Map<string, Partial<Columns>>
}

interface Placement { id: string, table: string, uid: string | null }

export interface RowSnapshot {
  schema: string
  hookTables: HookTables
  tables: Map<string, TableState>
  placements: Placement[]
  tombstones: Map<string, { id: string, releaseToken: string | null }>
}

/** PostgreSQL cannot be read as the plan needs, or holds what the plan cannot follow; says what to do. */
export class RowSnapshotError extends Error {}

const text = (value: unknown): string | undefined => typeof value === 'string' ? value : undefined

/** A PostgresWriter's row id, `<namespace>/<name>`. */
export function rowIdOf (object: Json): string {
  return `${String(object.metadata?.namespace ?? '')}/${String(object.metadata?.name)}`
}

/** The tables a PostgresWriter names: its spec's and its status's. */
function namedTables (object: Json): string[] {
  return [text(object.spec?.table), text(object.status?.table)].filter((table): table is string => table !== undefined && isSqlIdentifier(table))
}

/** The rows of one statement of statements.ts, sent unnamed. */
async function select<R extends pg.QueryResultRow, Parameter extends string = string, Shape = unknown> (client: pg.ClientBase, definition: StatementDefinition<Parameter, Shape>, shape: Shape, values: Readonly<Record<Parameter, Value>>): Promise<R[]> {
  return (await client.query<R>(definition.text(shape), definition.values(values) as unknown[])).rows
}

/** The snapshot before anything is read: no table, no row. */
export function emptySnapshot (schema: string): RowSnapshot {
  return { schema, hookTables: 'missing', tables: new Map(), placements: [], tombstones: new Map() }
}

// The oid the forecast gives a table it creates.
const PLANNED = 'planned '

/**
 * Reads, in one read-only transaction of one snapshot, what the planned PostgresWriters' syncs and finalizes read:
 * the hook's own tables, and each table they name or are recorded in, with the rows of their ids. Nothing is written
 * and no lock outlives the transaction, which ends before this returns. What the forecast of earlier PostgresWriters
 * created (`before`: the hook's tables, a table) is kept, so that a later page is planned as after them.
 */
export async function readRowSnapshot (client: pg.ClientBase, schema: string, objects: readonly Json[], before?: RowSnapshot): Promise<RowSnapshot> {
  const ids = [...new Set(objects.map(rowIdOf))]
  const uids = [...new Set(objects.map((object) => text(object.metadata?.uid)).filter((uid): uid is string => uid !== undefined))]
  const snapshot = emptySnapshot(schema)
  await client.query('BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ')
  try {
    const inspect = async (table: string): Promise<{ hookTables: HookTables, relation: Relation | undefined }> => {
      const [row] = await select<InspectReport, 'schema' | 'table', undefined>(client, inspectTable, undefined, { schema, table })
      return { hookTables: row?.hookTables ?? 'missing', relation: row === undefined || row.oid === null ? undefined : row as Relation }
    }
    snapshot.hookTables = (await inspect(TOMBSTONES_TABLE)).hookTables
    if (snapshot.hookTables === 'earlier') {
      throw new RowSnapshotError(`PostgresWriter's tables in schema ${schema} are those of an earlier version, which the first sync of this one migrates (docs/postgres-writer.md): plan once the hook server of this version has run`)
    }
    if (snapshot.hookTables === 'other') {
      throw new RowSnapshotError(`PostgresWriter's tables in schema ${schema} lack columns this version reads: another version laid them out, and this one refuses to write (docs/postgres-writer.md); plan from the checkout of the version that laid them out`)
    }
    if (snapshot.hookTables === 'current' && ids.length > 0) {
      snapshot.placements = (await select<{ id: string, table_name: string, uid: string | null }, 'ids', { schema: string }>(client, readPlacements, { schema }, { ids }))
        .map(({ id, table_name: table, uid }) => ({ id, table, uid }))
      const tombstones = await select<{ object_uid: string, id: string, release_token: string | null }, 'uids', { schema: string }>(client, readTombstones, { schema }, { uids })
      for (const { object_uid: uid, id, release_token: releaseToken } of tombstones) snapshot.tombstones.set(uid, { id, releaseToken })
    }
    const tables = [...new Set([...objects.flatMap(namedTables), ...snapshot.placements.map(({ table }) => table).filter(isSqlIdentifier)])].sort()
    for (const table of tables) {
      const { relation } = await inspect(table)
      const state: TableState = { relation, rows: new Map() }
      snapshot.tables.set(table, state)
      const present = new Set(relation?.columns.map(({ name }) => name))
      if (relation?.relkind !== 'r' || !present.has('id') || ids.length === 0) continue
      const columns = COLUMNS.filter((column) => present.has(column))
      for (const row of await select<Record<string, unknown>, 'ids', { schema: string, table: string, columns: readonly string[] }>(client, readRows, { schema, table, columns }, { ids })) {
        state.rows.set(String(row.id), Object.fromEntries(columns.map((column) => [column, column === 'age' && row.age !== null ? Number(row.age) : row[column]])))
      }
    }
    await client.query('COMMIT')
    if (before?.hookTables === 'current' && snapshot.hookTables === 'missing') snapshot.hookTables = 'current'
    for (const [table, { relation }] of before?.tables ?? []) {
      if (relation?.oid.startsWith(PLANNED) === true && snapshot.tables.get(table)?.relation === undefined) snapshot.tables.set(table, { relation, rows: new Map() })
    }
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    if (error instanceof RowSnapshotError) throw error
    const { code, message } = error as { code?: string, message: string }
    throw new RowSnapshotError(code === '42501'
      ? `the plan's PostgreSQL user may not read what PostgresWriter reads (${message}): grant it SELECT on the tables of schema ${schema} (docs/plan.md)`
      : `cannot read PostgresWriter's tables in schema ${schema}: ${message}`)
  }
  return snapshot
}

type Values = Readonly<Record<string, Value>>

/**
 * A session of the row store on the snapshot: each statement answered as PostgreSQL would answer it on the database
 * the snapshot was read from, after the statements before it, and what it would do to a row recorded.
 */
class SnapshotSession implements Session {
  constructor (private readonly snapshot: RowSnapshot, private readonly effects: RowEffect[]) {}

  async batch (queries: readonly Query[]): Promise<unknown[][]> {
    return queries.map((query) => this.answer(query))
  }

  async change (ddl: Ddl): Promise<void> {
    if (ddl.action === 'migrate') throw new RowSnapshotError('the plan does not migrate the hook\'s tables of an earlier version')
    if (ddl.action === 'createHookTables') {
      this.effects.push({ action: 'createHookTables', schema: this.snapshot.schema })
      this.snapshot.hookTables = 'current'
      return
    }
    this.effects.push({ action: 'createTable', table: this.qualified(ddl.table) })
    this.snapshot.tables.set(ddl.table, { relation: createdRelation(`${PLANNED}${ddl.table}`), rows: new Map() })
  }

  async transaction (work: () => Promise<void>): Promise<void> {
    await work()
  }

  private answer ({ definition, shape, values }: Query): unknown[] {
    const table = (shape as { table?: string } | undefined)?.table ?? ''
    switch (definition) {
      case lockRow: return [{}]
      case inspectTable: return [this.inspect(String(values.table))]
      case readRow: return this.readRow(table, values)
      case updateRow: return [this.updateRow(table, values)]
      case placeRowAlone: return [this.placeRowAlone(table, values)]
      case placeRow: return [this.placeRow(table, values, (shape as { others: readonly string[] }).others)]
      case finalizeDeleting: return [this.finalize(values, (shape as { tables: readonly string[] }).tables)]
      case finalizeOrphaning: return [this.finalize(values, undefined)]
      default: throw new RowSnapshotError(`the plan has no forecast of the statement "${definition.name}": add one to dev/plan/postgres-writer.ts`)
    }
  }

  private qualified (table: string): string {
    return `${this.snapshot.schema}.${table}`
  }

  private inspect (table: string): InspectReport {
    const relation = this.snapshot.tables.get(table)?.relation ?? { oid: null, relkind: '', partition: false, parent: null, columns: [], unique_id: false }
    return { hookTables: this.snapshot.hookTables, hookColumnsMissing: [], ...relation }
  }

  /** The row of `values.id` in `table`, when `table` is still the one found fit (`values.oid`). */
  private rowIn (table: string, values: Values): { state: TableState, row: Partial<Columns> | undefined, sameTable: boolean } | undefined {
    const state = this.snapshot.tables.get(table)
    if (state === undefined) return undefined
    return { state, row: state.rows.get(String(values.id)), sameTable: state.relation?.oid === values.oid }
  }

  private matches (row: Partial<Columns> | undefined, values: Values): boolean {
    return row !== undefined && COLUMNS.every((column) => row[column] === values[column])
  }

  /** Recorded as this object's in `table`, and not tombstoned. */
  private settled (table: string, values: Values): boolean {
    return this.snapshot.placements.some((placement) => placement.id === values.id && placement.table === table && placement.uid === values.uid) &&
      !this.snapshot.tombstones.has(String(values.uid))
  }

  private readRow (table: string, values: Values): ReadRowReport[] {
    const found = this.rowIn(table, values)
    if (found?.row === undefined) return []
    return [{ sameTable: found.sameTable, matched: this.matches(found.row, values), settled: this.settled(table, values) }]
  }

  private updateRow (table: string, values: Values): UpdateRowReport {
    const found = this.rowIn(table, values)
    if (found?.row === undefined || !found.sameTable || !this.settled(table, values) || this.matches(found.row, values)) return { written: 0, kept: false }
    return { written: this.upsert(found.state, table, values), kept: true }
  }

  private placeRowAlone (table: string, values: Values): PlaceRowAloneReport {
    const { id, uid } = values
    const found = this.rowIn(table, values)
    const sameTable = found?.sameTable ?? false
    const placed = sameTable && found?.row === undefined && !this.snapshot.tombstones.has(String(uid)) &&
      !this.snapshot.placements.some((placement) => placement.id === id && placement.table !== table)
    if (!placed || found === undefined) return { sameTable, written: 0, kept: false }
    const written = this.upsert(found.state, table, values)
    this.record(String(id), table, String(uid))
    return { sameTable, written, kept: written > 0 }
  }

  private placeRow (table: string, values: Values, others: readonly string[]): PlaceRowReport {
    const id = String(values.id)
    const uid = String(values.uid)
    const tombstone = this.snapshot.tombstones.get(uid)
    const releaseToken = tombstone?.releaseToken ?? null
    const finalized = tombstone !== undefined && !(releaseToken !== null && releaseToken === values.releaseToken)
    const found = this.rowIn(table, values)
    const sameTable = found?.sameTable ?? false
    const recorded = this.recorded(id, (placement) => placement.table !== table)
    const expected = recorded.every((other) => others.includes(other))
    const report = { sameTable, finalized, releaseToken, expected, written: 0, kept: false, existed: found?.row !== undefined, matched: this.matches(found?.row, values), tables: recorded }
    if (!sameTable || finalized || !expected || found === undefined) return report
    report.written = this.upsert(found.state, table, values)
    report.kept = report.written > 0
    for (const other of others.filter((name) => recorded.includes(name))) this.deleteRow(other, id)
    this.snapshot.placements = this.snapshot.placements.filter((placement) => placement.id !== id)
    this.record(id, table, uid)
    this.snapshot.tombstones.delete(uid)
    return report
  }

  /** A finalize that deletes the row from those of `tables` recorded as holding it; without `tables` (Orphan), none. */
  private finalize (values: Values, tables: readonly string[] | undefined): FinalizeReport {
    const id = String(values.id)
    const uid = String(values.uid)
    const owned = (placement: Placement): boolean => placement.uid === uid || placement.uid === null
    const recorded = this.recorded(id, owned)
    const expected = tables === undefined || recorded.every((table) => tables.includes(table))
    if (!expected) return { expected, tables: recorded, releaseToken: null }
    const previous = this.snapshot.tombstones.get(uid)
    if (tables !== undefined && previous === undefined) {
      for (const table of tables.filter((name) => recorded.includes(name))) this.deleteRow(table, id)
      this.snapshot.placements = this.snapshot.placements.filter((placement) => !(placement.id === id && owned(placement)))
    }
    const releaseToken = values.deleting === 'true' ? null : previous === undefined ? String(values.releaseToken) : previous.releaseToken
    this.snapshot.tombstones.set(uid, { id, releaseToken })
    return { expected, tables: recorded, releaseToken }
  }

  /** The ordinary tables recorded as holding the row of `id` (statements.ts, recordedTables), among those `which` selects. */
  private recorded (id: string, which: (placement: Placement) => boolean): string[] {
    const pattern = new RegExp(TABLE_NAME_PATTERN)
    return this.snapshot.placements
      .filter((placement) => placement.id === id && which(placement) && pattern.test(placement.table) && this.snapshot.tables.get(placement.table)?.relation?.relkind === 'r')
      .map(({ table }) => table).sort()
  }

  private record (id: string, table: string, uid: string): void {
    this.snapshot.placements = [...this.snapshot.placements.filter((placement) => !(placement.id === id && placement.table === table)), { id, table, uid }]
  }

  /** INSERT … ON CONFLICT (id) DO UPDATE … WHERE the row differs: the rows written. */
  private upsert (state: TableState, table: string, values: Values): number {
    const id = String(values.id)
    const current = state.rows.get(id)
    const wanted: Columns = { name: String(values.name), age: Number(values.age), country: String(values.country) }
    if (current === undefined) {
      this.effects.push({ action: 'insert', table: this.qualified(table), id, columns: Object.fromEntries(COLUMNS.map((column) => [column, { to: wanted[column] }])) })
      state.rows.set(id, wanted)
      return 1
    }
    const changed = COLUMNS.filter((column) => current[column] !== wanted[column])
    if (changed.length === 0) return 0
    this.effects.push({ action: 'update', table: this.qualified(table), id, columns: Object.fromEntries(changed.map((column) => [column, { from: current[column], to: wanted[column] }])) })
    state.rows.set(id, wanted)
    return 1
  }

  private deleteRow (table: string, id: string): void {
    const state = this.snapshot.tables.get(table)
    if (state?.rows.delete(id) === true) this.effects.push({ action: 'delete', table: this.qualified(table), id })
  }
}

/**
 * PostgresWriter's rows, forecast: each call runs the row store's own writes (hooks/postgres-writer/rows.ts) on the
 * snapshot, and what its statements would do is kept until taken.
 */
export class RowForecast implements Rows {
  private effects: RowEffect[] = []
  private readonly writes: RowWrites

  /** What the calls see: replaced for each page of PostgresWriters. */
  constructor (public snapshot: RowSnapshot, settings: PostgresWriterSettings) {
    this.writes = new RowWrites(settings.schema, new TableReadiness(settings))
  }

  async write (plan: Extract<SyncPlan, { kind: 'write' }>): Promise<WriteResult> {
    return await this.writes.write(new SnapshotSession(this.snapshot, this.effects), plan)
  }

  async delete (plan: FinalizePlan): Promise<FinalizeResult> {
    return await this.writes.delete(new SnapshotSession(this.snapshot, this.effects), plan)
  }

  /** What the calls since the last take would do. */
  takeEffects (): RowEffect[] {
    const taken = this.effects
    this.effects = []
    return taken
  }
}

/** PostgresWriter as the plan runs it: its own hooks and settings, writing to `forecast` instead of PostgreSQL. */
export function forecastingWriter (forecast: RowForecast): { controller: Controller, takeEffects: () => RowEffect[] } {
  return {
    controller: { ...postgresWriter, needs: [], connect: (_given, settings) => ({ rows: forecast, tables: settings }) },
    takeEffects: () => forecast.takeEffects()
  }
}
