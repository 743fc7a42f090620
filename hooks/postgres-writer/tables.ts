/**
 * What a PostgresWriter table is. The row is written only into an ordinary table (not a view, a materialized view,
 * a partitioned table, a partition, an inheritance child or a foreign table), where the hook can read it back and
 * delete it, and whose columns can hold it as sent. Every statement names its table with ONLY, so that an inheritance
 * parent's children are never reached.
 */

/**
 * The hook's own tables in PG_SCHEMA, with names no PostgresWriter table can have (see TABLE_NAME_PATTERN).
 *
 * Placements: where the hook wrote each object's row, one entry per table that holds it (one, once a placement
 * committed), written in the transaction that writes the row. A placement deletes the row only from the tables
 * recorded here, and a finalize deletes it from those alone, whatever PG_TABLE_ALLOWLIST says now: the hook removes
 * every row it wrote, and never one it did not. `uid` is the object that wrote it; null for a row adopted from an
 * earlier version, which any object of that id owns.
 */
export const PLACEMENTS_TABLE = 'postgres-writer-rows'

/** Where finalize records the uid of each finalized object. */
export const TOMBSTONES_TABLE = 'postgres-writer-tombstones'

/**
 * How long a tombstone is kept after the last finalize of its object. It must outlive every call that Metacontroller
 * sent before the finalize: such a call starts within the server's request timeout (60 s) and then runs at most
 * PG_HOOK_DEADLINE (under 10 s), each of its statements also bounded by the deadline. Ten minutes leave a wide
 * margin; finalize removes older tombstones, never its own.
 */
export const TOMBSTONE_RETENTION_SECONDS = 600

/**
 * The hook's tables as the catalog shows them: `current`; `earlier`, the tombstones of a version that recorded no
 * placements (its column `uid`), whose rows the migration adopts; `missing`, to be created; or `other`, without a
 * column this version reads (HOOK_TABLE_COLUMNS): laid out by another version, a later one rolled back from, say.
 */
export type HookTables = 'current' | 'earlier' | 'missing' | 'other'

/** The columns of the hook's own tables that this version reads and writes. */
export const HOOK_TABLE_COLUMNS: ReadonlyArray<readonly [table: string, column: string]> = [
  [TOMBSTONES_TABLE, 'object_uid'], [TOMBSTONES_TABLE, 'id'], [TOMBSTONES_TABLE, 'finalized_at'], [TOMBSTONES_TABLE, 'release_token'],
  [PLACEMENTS_TABLE, 'id'], [PLACEMENTS_TABLE, 'table_name'], [PLACEMENTS_TABLE, 'uid']
]

/** What the catalog says of a relation: `inspectTable`'s row (statements.ts). */
export interface Relation {
  oid: string
  relkind: string
  partition: boolean
  /** The parent of a partition or an inheritance child. */
  parent: string | null
  columns: Column[]
  /** A valid, immediate unique index on id alone (a primary key or a unique constraint): what ON CONFLICT (id) needs. */
  unique_id: boolean
}

interface Column {
  name: string
  type: string
  typeOid: number
  notNull: boolean
  hasDefault: boolean
  generated: boolean
  /** '' unless an identity column: 'a' (GENERATED ALWAYS) or 'd' (BY DEFAULT). */
  identity: string
}

const RELATION_KINDS: Record<string, string> = {
  p: 'a partitioned table',
  v: 'a view',
  m: 'a materialized view',
  f: 'a foreign table',
  S: 'a sequence',
  i: 'an index',
  I: 'a partitioned index',
  c: 'a composite type',
  t: 'a TOAST table'
}

const TEXT = { oids: [25, 1043], names: 'text or character varying' }
const INTEGER = { oids: [23, 20], names: 'integer or bigint (it holds 0 to 2147483647)' }
/** The types a table's columns may have to hold the row. */
const ROW_COLUMNS = { id: TEXT, name: TEXT, age: INTEGER, country: TEXT }
export const ROW_SHAPE = 'it needs id text primary key, name text, age integer, country text'

/** The columns of a table the hook creates (statements.ts, rowTableDdl): id its primary key, the others NOT NULL. */
export const ROW_TABLE_COLUMNS = [
  { name: 'id', type: 'text', typeOid: 25 },
  { name: 'name', type: 'text', typeOid: 25 },
  { name: 'age', type: 'integer', typeOid: 23 },
  { name: 'country', type: 'text', typeOid: 25 }
] as const

/** A table the hook created, as inspectTable (statements.ts) would find it, under `oid`. */
export function createdRelation (oid: string): Relation {
  return {
    oid,
    relkind: 'r',
    partition: false,
    parent: null,
    columns: ROW_TABLE_COLUMNS.map(({ name, type, typeOid }) => ({ name, type, typeOid, notNull: true, hasDefault: false, generated: false, identity: '' })),
    unique_id: true
  }
}

export type TableVerdict =
  | { kind: 'fit', oid: string }
  | { kind: 'unfit', reason: 'TableNotOrdinary' | 'TableIncompatible', message: string }

/** Whether `relation` (as inspectTable found it) can hold PostgresWriter rows, and if not, why and what to do. */
export function tableVerdict (schema: string, table: string, relation: Relation): TableVerdict {
  const name = `${schema}.${table}`
  const kind = relation.partition
    ? `a partition of ${relation.parent ?? 'a partitioned table'}`
    : relation.relkind === 'r'
      ? relation.parent === null ? undefined : `an inheritance child of ${relation.parent}`
      : RELATION_KINDS[relation.relkind] ?? `a relation of kind ${relation.relkind}`
  if (kind !== undefined) {
    return {
      kind: 'unfit',
      reason: 'TableNotOrdinary',
      message: `${name} is ${kind}, not an ordinary table: PostgresWriter writes its row only into an ordinary table, where it reads the row back and deletes it; point spec.table at an ordinary table; nothing was written`
    }
  }
  const problems = columnProblems(name, relation)
  if (problems.length > 0) {
    return { kind: 'unfit', reason: 'TableIncompatible', message: `${name} cannot hold the row: ${problems.join('; ')}; ${ROW_SHAPE}; nothing was written` }
  }
  return { kind: 'fit', oid: relation.oid }
}

function columnProblems (name: string, relation: Relation): string[] {
  const problems: string[] = []
  const byName = new Map(relation.columns.map((column) => [column.name, column]))
  for (const [columnName, type] of Object.entries(ROW_COLUMNS)) {
    const column = byName.get(columnName)
    if (column === undefined) problems.push(`it has no column ${columnName}`)
    else if (!type.oids.includes(column.typeOid)) problems.push(`column ${columnName} is ${column.type}, but it must be ${type.names}`)
    else if (column.generated) problems.push(`column ${columnName} is generated`)
    else if (column.identity === 'a') problems.push(`column ${columnName} is an identity column GENERATED ALWAYS`)
  }
  if (byName.has('id') && !relation.unique_id) {
    problems.push(`column id has no primary key or unique constraint: add one (ALTER TABLE ${name} ADD PRIMARY KEY (id))`)
  }
  for (const column of relation.columns) {
    if (!(column.name in ROW_COLUMNS) && column.notNull && !column.hasDefault && column.identity === '') {
      problems.push(`column ${column.name} is NOT NULL and has no default`)
    }
  }
  return problems
}
