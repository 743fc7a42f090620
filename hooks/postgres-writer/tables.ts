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

export const quote = (identifier: string): string => `"${identifier}"`
export const qualified = (schema: string, table: string): string => `${quote(schema)}.${quote(table)}`

/** The DDL of a table the hook creates itself (PG_AUTO_CREATE_TABLES=true). */
export function rowTableDdl (schema: string, table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(schema, table)} (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, country text NOT NULL)`
}

/**
 * The DDL of the hook's own tables. A tombstone's `release_token` is set when the object was finalized while not
 * being deleted (it stopped matching the DecoratorController's selector): a sync that carries it back in the status
 * was sent after that finalize, and may write again.
 */
export function hookTablesDdl (schema: string): string[] {
  const tombstones = qualified(schema, TOMBSTONES_TABLE)
  return [
    `CREATE TABLE IF NOT EXISTS ${tombstones} (object_uid text PRIMARY KEY, id text NOT NULL, finalized_at timestamptz NOT NULL DEFAULT now(), release_token text)`,
    `CREATE INDEX IF NOT EXISTS ${quote(`${TOMBSTONES_TABLE}-finalized-at`)} ON ${tombstones} (finalized_at)`,
    placementsDdl(schema)
  ]
}

function placementsDdl (schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(schema, PLACEMENTS_TABLE)} (id text NOT NULL, table_name text NOT NULL, uid text, PRIMARY KEY (id, table_name))`
}

/**
 * The hook's tables as the catalog shows them: `current`; `earlier`, the tombstones of a version that recorded no
 * placements (its column `uid`), whose rows the migration adopts; or `missing`, to be created.
 */
export type HookTables = 'current' | 'earlier' | 'missing'

/**
 * The migration from a version that recorded no placements, in one transaction after the lock on the tombstones
 * table, which waits for every statement of that version to end: each row of every table that version would have
 * taken for a PostgresWriter table (`earlierRowTablesQuery`) is recorded, with no owner. Its tombstones' `uid` column
 * is renamed, so that replicas of that version still running (a rolling update) fail from then on, instead of writing
 * rows that no placement records.
 */
export function migrationDdl (schema: string, earlierTables: readonly string[]): string[] {
  const tombstones = qualified(schema, TOMBSTONES_TABLE)
  const placements = qualified(schema, PLACEMENTS_TABLE)
  return [
    `LOCK TABLE ${tombstones} IN ACCESS EXCLUSIVE MODE`,
    placementsDdl(schema),
    ...earlierTables.map((table) =>
      `INSERT INTO ${placements} (id, table_name) SELECT id, '${table}' FROM ONLY ${qualified(schema, table)} WHERE id IS NOT NULL ON CONFLICT DO NOTHING`),
    `ALTER TABLE ${tombstones} RENAME COLUMN uid TO object_uid`,
    `ALTER TABLE ${tombstones} ADD COLUMN IF NOT EXISTS release_token text`
  ]
}

/** What the catalog says of a relation: `inspectStatement`'s row. */
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

/**
 * $1 schema, $2 table: the relation of that name (all null when there is none), and the state of the hook's own
 * tables. One catalog read, made the first time a table is used and again when a write finds it changed.
 */
export const inspectStatement = `SELECT CASE
    WHEN to_regclass(format('%I.%I', $1::text, '${TOMBSTONES_TABLE}')) IS NULL THEN 'missing'
    WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
      WHERE a.attrelid = to_regclass(format('%I.%I', $1::text, '${TOMBSTONES_TABLE}')) AND a.attname = 'uid' AND NOT a.attisdropped) THEN 'earlier'
    WHEN to_regclass(format('%I.%I', $1::text, '${PLACEMENTS_TABLE}')) IS NULL THEN 'missing'
    ELSE 'current' END AS "hookTables", r.*
  FROM (SELECT 1) AS one LEFT JOIN LATERAL (
    SELECT c.oid::text AS oid, c.relkind::text AS relkind, c.relispartition AS partition,
      (SELECT i.inhparent::regclass::text FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid LIMIT 1) AS parent,
      COALESCE((SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'typeOid', a.atttypid::int,
          'notNull', a.attnotnull, 'hasDefault', a.atthasdef, 'generated', a.attgenerated <> '', 'identity', a.attidentity::text) ORDER BY a.attnum)
        FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]') AS columns,
      EXISTS (SELECT 1 FROM pg_catalog.pg_index x JOIN pg_catalog.pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
        WHERE x.indrelid = c.oid AND x.indisunique AND x.indimmediate AND x.indisvalid AND x.indnkeyatts = 1
          AND x.indpred IS NULL AND x.indexprs IS NULL AND a.attname = 'id') AS unique_id
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1 AND c.relname = $2
  ) AS r ON true`

/**
 * $1 schema, $2 TABLE_NAME_PATTERN: the tables in which a version that recorded no placements wrote its rows, and
 * deleted stray copies of them: the ordinary tables of the schema with a text id and name, age and country columns,
 * whose name a spec.table can have. That version also left out the tables PG_TABLE_ALLOWLIST refused; the migration
 * does not, since an earlier allowlist may have admitted them. Only those this user may read.
 */
export const earlierRowTablesQuery = `SELECT c.relname
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = $1 AND c.relkind = 'r' AND NOT c.relispartition
    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid)
    AND c.relname ~ $2 AND has_table_privilege(c.oid, 'SELECT')
    AND (SELECT count(*) FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      AND (a.attname IN ('name', 'age', 'country') OR (a.attname = 'id' AND a.atttypid IN ('text'::regtype, 'varchar'::regtype)))) = 4
  ORDER BY c.relname`

/**
 * The tables of schema `schema` (a parameter) recorded as holding the row of `id` (a parameter), among those `owner`
 * (a condition on `r`, the placement) selects: those whose name a spec.table can have (`pattern`), and that are still
 * ordinary tables. A record of a table dropped since is stale: the row went with the table. A SELECT of
 * `r.table_name`, ordered.
 */
export const recordedTablesQuery = (placements: string, { id, schema, pattern, owner }: { id: string, schema: string, pattern: string, owner: string }): string => `SELECT r.table_name
  FROM ${placements} r
  WHERE r.id = ${id} AND ${owner} AND r.table_name ~ ${pattern}
    AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = to_regclass(format('%I.%I', ${schema}::text, r.table_name)) AND c.relkind = 'r')
  ORDER BY r.table_name`

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
const ROW_COLUMNS = { id: TEXT, name: TEXT, age: INTEGER, country: TEXT }
export const ROW_SHAPE = 'it needs id text primary key, name text, age integer, country text'

export type TableVerdict =
  | { kind: 'fit', oid: string }
  | { kind: 'unfit', reason: 'TableNotOrdinary' | 'TableIncompatible', message: string }

/** Whether `relation` (as inspectStatement found it) can hold PostgresWriter rows, and if not, why and what to do. */
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
