import { randomUUID } from 'node:crypto'
import type { Controller } from '../../hooks/framework/controller.js'
import type pg from 'pg'
import { postgresWriter, type Rows } from '../../hooks/postgres-writer/index.js'
import { refused, tableMissing } from '../../hooks/postgres-writer/failures.js'
import { hookTablesMissing, rowDeleted } from '../../hooks/postgres-writer/rows.js'
import type { PostgresWriterSettings } from '../../hooks/postgres-writer/settings.js'
import { inspectTable, qualified } from '../../hooks/postgres-writer/statements.js'
import { isSqlIdentifier } from '../../hooks/postgres-writer/sql-identifier.js'
import type { FinalizePlan, FinalizeResult, Row, SyncPlan, WriteResult } from '../../hooks/postgres-writer/sync.js'
import { PLACEMENTS_TABLE, tableVerdict, TOMBSTONES_TABLE, type HookTables, type Relation } from '../../hooks/postgres-writer/tables.js'
import type { Json } from './kube-api.js'

/**
 * What PostgresWriter's hooks would write, without writing: the rows, the hook's records of where it wrote them and
 * its tombstones are read once, in one read-only transaction, for every PostgresWriter planned; then each sync or
 * finalize runs against a stand-in for RowStore (hooks/postgres-writer/rows.ts) that follows its statements on that
 * copy, says what each would do to a row, and keeps the copy as it would leave the database for the next call.
 */

/** What a statement of RowStore would do: to a row (its columns by name), or to the schema. */
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

/**
 * Reads, in one read-only transaction of one snapshot, what the planned PostgresWriters' syncs and finalizes read:
 * the hook's own tables, and each table they name or are recorded in, with the rows of their ids. Nothing is written
 * and no lock outlives the transaction, which ends before this returns.
 */
export async function readRowSnapshot (client: pg.ClientBase, schema: string, objects: readonly Json[]): Promise<RowSnapshot> {
  const ids = [...new Set(objects.map(rowIdOf))]
  const uids = [...new Set(objects.map((object) => text(object.metadata?.uid)).filter((uid): uid is string => uid !== undefined))]
  const snapshot: RowSnapshot = { schema, hookTables: 'missing', tables: new Map(), placements: [], tombstones: new Map() }
  await client.query('BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ')
  try {
    const inspect = async (table: string): Promise<{ hookTables: HookTables, relation: Relation | undefined }> => {
      const [row] = (await client.query<Relation & { hookTables: HookTables, oid: string | null }>(inspectTable.text(), inspectTable.values({ schema, table }))).rows
      return { hookTables: row?.hookTables ?? 'missing', relation: row === undefined || row.oid === null ? undefined : row }
    }
    snapshot.hookTables = (await inspect(TOMBSTONES_TABLE)).hookTables
    if (snapshot.hookTables === 'earlier') {
      throw new RowSnapshotError(`PostgresWriter's tables in schema ${schema} are those of an earlier version, which the first sync of this one migrates (docs/postgres-writer.md): plan once the hook server of this version has run`)
    }
    if (snapshot.hookTables === 'other') {
      throw new RowSnapshotError(`PostgresWriter's tables in schema ${schema} lack columns this version reads: another version laid them out, and this one refuses to write (docs/postgres-writer.md); plan from the checkout of the version that laid them out`)
    }
    if (snapshot.hookTables === 'current' && ids.length > 0) {
      snapshot.placements = (await client.query<{ id: string, table_name: string, uid: string | null }>(
        `SELECT id, table_name, uid FROM ${qualified(schema, PLACEMENTS_TABLE)} WHERE id = ANY($1::text[]) ORDER BY id, table_name`, [ids]
      )).rows.map(({ id, table_name: table, uid }) => ({ id, table, uid }))
      for (const { object_uid: uid, id, release_token: releaseToken } of (await client.query<{ object_uid: string, id: string, release_token: string | null }>(
        `SELECT object_uid, id, release_token FROM ${qualified(schema, TOMBSTONES_TABLE)} WHERE object_uid = ANY($1::text[])`, [uids]
      )).rows) snapshot.tombstones.set(uid, { id, releaseToken })
    }
    const tables = [...new Set([...objects.flatMap(namedTables), ...snapshot.placements.map(({ table }) => table).filter(isSqlIdentifier)])].sort()
    for (const table of tables) {
      const { relation } = await inspect(table)
      const state: TableState = { relation, rows: new Map() }
      snapshot.tables.set(table, state)
      const present = new Set(relation?.columns.map(({ name }) => name))
      if (relation?.relkind !== 'r' || !present.has('id') || ids.length === 0) continue
      const columns = COLUMNS.filter((column) => present.has(column))
      const rows = await client.query<Record<string, unknown>>(
        `SELECT id${columns.map((column) => `, ${column}`).join('')} FROM ONLY ${qualified(schema, table)} WHERE id = ANY($1::text[])`, [ids])
      for (const row of rows.rows) {
        state.rows.set(String(row.id), Object.fromEntries(columns.map((column) => [column, column === 'age' && row.age !== null ? Number(row.age) : row[column]])))
      }
    }
    await client.query('COMMIT')
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

/**
 * RowStore's decisions, on the snapshot instead of the database: each call follows write() and delete() statement
 * by statement, records what they would do, and leaves the snapshot as they would leave the database.
 */
export class RowForecast implements Rows {
  /** What the calls since the last `takeEffects` would have done. */
  private effects: RowEffect[] = []

  constructor (private readonly snapshot: RowSnapshot, private readonly policy: PostgresWriterSettings) {}

  async write (plan: Extract<SyncPlan, { kind: 'write' }>): Promise<WriteResult> {
    return this.forecastWrite(plan, this.effects)
  }

  async delete (plan: FinalizePlan): Promise<FinalizeResult> {
    return this.forecastDelete(plan, this.effects)
  }

  takeEffects (): RowEffect[] {
    const taken = this.effects
    this.effects = []
    return taken
  }

  private qualified (table: string): string {
    return `${this.snapshot.schema}.${table}`
  }

  /** The hook's own tables: current, created (PG_AUTO_CREATE_TABLES), or missing. */
  private hookTablesReady (effects: RowEffect[]): 'ready' | 'none' {
    if (this.snapshot.hookTables === 'current') return 'ready'
    if (!this.policy.autoCreateTables) return 'none'
    effects.push({ action: 'createHookTables', schema: this.snapshot.schema })
    this.snapshot.hookTables = 'current'
    return 'ready'
  }

  /** RowStore.fitTable: the table, once it exists and can hold the row; otherwise why not. */
  private fitTable (table: string, effects: RowEffect[]): TableState | WriteResult {
    if (this.hookTablesReady(effects) === 'none') return refused('TableMissing', hookTablesMissing(this.snapshot.schema))
    let state = this.snapshot.tables.get(table)
    if (state?.relation === undefined) {
      if (!this.policy.autoCreateTables) return tableMissing(`relation "${this.qualified(table)}" does not exist`)
      effects.push({ action: 'createTable', table: this.qualified(table) })
      state = { relation: createdTable(), rows: new Map() }
      this.snapshot.tables.set(table, state)
    }
    const verdict = tableVerdict(this.snapshot.schema, table, state.relation as Relation)
    if (verdict.kind === 'unfit') return refused(verdict.reason, verdict.message)
    return state
  }

  private forecastWrite (plan: Extract<SyncPlan, { kind: 'write' }>, effects: RowEffect[]): WriteResult {
    const { row, table, previousTable, uid, releaseToken } = plan
    const state = this.fitTable(table, effects)
    if (!('rows' in state)) return state
    const { tombstones } = this.snapshot
    const recordedHere = this.snapshot.placements.some((placement) => placement.id === row.id && placement.table === table && placement.uid === uid)
    const current = state.rows.get(row.id)
    // RowStore.inPlace: the row where the last acknowledged sync put it, recorded there as this object's.
    if (previousTable === table && current !== undefined && recordedHere && !tombstones.has(uid)) {
      return { kind: 'done', wrote: this.upsert(state, table, row, effects) }
    }
    // RowStore.place: unless the object was finalized, the row is upserted, deleted from the other tables recorded
    // as holding it, and recorded here alone.
    const tombstone = tombstones.get(uid)
    if (tombstone !== undefined && !(tombstone.releaseToken !== null && tombstone.releaseToken === (releaseToken ?? null))) {
      return rowDeleted(row.id, uid, tombstone.releaseToken)
    }
    const wrote = this.upsert(state, table, row, effects)
    for (const other of this.recorded(row.id, (placement) => placement.table !== table)) this.deleteRow(other, row.id, effects)
    this.snapshot.placements = [...this.snapshot.placements.filter((placement) => placement.id !== row.id), { id: row.id, table, uid }]
    tombstones.delete(uid)
    return { kind: 'done', wrote }
  }

  private forecastDelete (plan: FinalizePlan, effects: RowEffect[]): FinalizeResult {
    const { id, uid, deleting, policy } = plan
    if (this.hookTablesReady(effects) === 'none') return { kind: 'done', releaseToken: undefined, tables: [] }
    const owned = (placement: Placement): boolean => placement.uid === uid || placement.uid === null
    const tables = this.recorded(id, owned)
    const previous = this.snapshot.tombstones.get(uid)
    if (policy === 'Delete' && previous === undefined) {
      for (const table of tables) this.deleteRow(table, id, effects)
      this.snapshot.placements = this.snapshot.placements.filter((placement) => !(placement.id === id && owned(placement)))
    }
    const releaseToken = deleting ? null : previous === undefined ? randomUUID() : previous.releaseToken
    this.snapshot.tombstones.set(uid, { id, releaseToken })
    return { kind: 'done', releaseToken: releaseToken ?? undefined, tables }
  }

  /** The ordinary tables recorded as holding the row of `id` (recordedTablesQuery), among those `which` selects. */
  private recorded (id: string, which: (placement: Placement) => boolean): string[] {
    return this.snapshot.placements
      .filter((placement) => placement.id === id && which(placement) && isSqlIdentifier(placement.table) && this.snapshot.tables.get(placement.table)?.relation?.relkind === 'r')
      .map(({ table }) => table).sort()
  }

  /** INSERT … ON CONFLICT (id) DO UPDATE … WHERE the row differs. */
  private upsert (state: TableState, table: string, row: Row, effects: RowEffect[]): 'nothing' | 'updated' | 'inserted' {
    const current = state.rows.get(row.id)
    const wanted: Columns = { name: row.name, age: row.age, country: row.country }
    if (current === undefined) {
      effects.push({ action: 'insert', table: this.qualified(table), id: row.id, columns: Object.fromEntries(COLUMNS.map((column) => [column, { to: wanted[column] }])) })
      state.rows.set(row.id, wanted)
      return 'inserted'
    }
    const changed = COLUMNS.filter((column) => current[column] !== wanted[column])
    if (changed.length === 0) return 'nothing'
    effects.push({ action: 'update', table: this.qualified(table), id: row.id, columns: Object.fromEntries(changed.map((column) => [column, { from: current[column], to: wanted[column] }])) })
    state.rows.set(row.id, wanted)
    return 'updated'
  }

  private deleteRow (table: string, id: string, effects: RowEffect[]): void {
    const state = this.snapshot.tables.get(table)
    if (state?.rows.delete(id) === true) effects.push({ action: 'delete', table: this.qualified(table), id })
  }
}

/** A table as PG_AUTO_CREATE_TABLES creates it (tables.ts rowTableDdl). */
function createdTable (): Relation {
  const column = (name: string, type: string, typeOid: number): Relation['columns'][number] =>
    ({ name, type, typeOid, notNull: true, hasDefault: false, generated: false, identity: '' })
  return {
    oid: '0',
    relkind: 'r',
    partition: false,
    parent: null,
    columns: [column('id', 'text', 25), column('name', 'text', 25), column('age', 'integer', 23), column('country', 'text', 25)],
    unique_id: true
  }
}

/** PostgresWriter as the plan runs it: its own hooks and settings, writing to `forecast` instead of PostgreSQL. */
export function forecastingWriter (forecast: RowForecast): { controller: Controller, takeEffects: () => RowEffect[] } {
  return {
    controller: { ...postgresWriter, needs: [], connect: (_given, settings) => ({ rows: forecast, tables: settings }) },
    takeEffects: () => forecast.takeEffects()
  }
}
