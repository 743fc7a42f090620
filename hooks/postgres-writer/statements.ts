import { defineStatement } from '../database/index.js'
import { HOOK_TABLE_COLUMNS, PLACEMENTS_TABLE, ROW_TABLE_COLUMNS, TOMBSTONE_RETENTION_SECONDS, TOMBSTONES_TABLE, type HookTables, type Relation } from './tables.js'

/**
 * Every statement PostgresWriter sends to PostgreSQL. Each is named, and so is each of its parameters (`$id`, sent as
 * a positional parameter: database/sql.ts). Values only travel as parameters. A text holds identifiers alone:
 * PG_SCHEMA and the row's tables, which sync.ts validated as lowercase SQL identifiers, quoted here, and the hook's
 * own tables (tables.ts).
 *
 * Every statement that writes the row's table, or deletes from one, names it with ONLY, so that an inheritance
 * parent's children are never reached.
 *
 * What a statement answers, a row of its report, is typed beside it: the row store (rows.ts, table-readiness.ts)
 * reads it, and so does the plan's forecast (dev/plan/postgres-writer.ts), which answers each statement from a
 * snapshot of the rows instead. A statement changed here changes both.
 */

export const quote = (identifier: string): string => `"${identifier}"`
export const qualified = (schema: string, table: string): string => `${quote(schema)}.${quote(table)}`

/** The identifiers a statement names: the schema and, for most, the table the row goes to. */
interface InSchema { schema: string }
interface OnTable extends InSchema { table: string }

const placements = (schema: string): string => qualified(schema, PLACEMENTS_TABLE)
const tombstones = (schema: string): string => qualified(schema, TOMBSTONES_TABLE)

/** The row's advisory lock, held until the transaction ends: placements and finalizes of one row never interleave. */
export const lockRow = defineStatement('lock the row', ['id'], () =>
  'SELECT pg_advisory_xact_lock(hashtextextended($id, 0))')

/**
 * The relation named `table` in `schema` (its columns null when there is none), the state of the hook's own tables
 * (tables.ts, HookTables), and the columns of theirs this version needs that are missing (`table.column`). One
 * catalog read, made the first time a table is used and again when a write finds it changed.
 */
export interface InspectReport extends Omit<Relation, 'oid'> {
  hookTables: HookTables
  /** The columns of the hook's tables that this version reads and that they lack, as `table.column`. */
  hookColumnsMissing: string[]
  /** Null when there is no relation of that name; its other fields then too. */
  oid: string | null
}

export const inspectTable = defineStatement('inspect a table', ['schema', 'table'], () => `SELECT CASE
    WHEN to_regclass(format('%I.%I', $schema::text, '${TOMBSTONES_TABLE}')) IS NULL THEN 'missing'
    WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
      WHERE a.attrelid = to_regclass(format('%I.%I', $schema::text, '${TOMBSTONES_TABLE}')) AND a.attname = 'uid' AND NOT a.attisdropped) THEN 'earlier'
    WHEN to_regclass(format('%I.%I', $schema::text, '${PLACEMENTS_TABLE}')) IS NULL THEN 'missing'
    WHEN cardinality(hook.missing) > 0 THEN 'other'
    ELSE 'current' END AS "hookTables", hook.missing AS "hookColumnsMissing", r.*
  FROM (SELECT ARRAY(
      SELECT format('%s.%s', needed.tbl, needed.col) FROM (VALUES ${HOOK_TABLE_COLUMNS.map(([table, column]) => `('${table}', '${column}')`).join(', ')}) AS needed (tbl, col)
      WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = to_regclass(format('%I.%I', $schema::text, needed.tbl)) AND a.attname = needed.col AND NOT a.attisdropped)
    ) AS missing) AS hook LEFT JOIN LATERAL (
    SELECT c.oid::text AS oid, c.relkind::text AS relkind, c.relispartition AS partition,
      (SELECT i.inhparent::regclass::text FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid LIMIT 1) AS parent,
      COALESCE((SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'typeOid', a.atttypid::int,
          'notNull', a.attnotnull, 'hasDefault', a.atthasdef, 'generated', a.attgenerated <> '', 'identity', a.attidentity::text) ORDER BY a.attnum)
        FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]') AS columns,
      EXISTS (SELECT 1 FROM pg_catalog.pg_index x JOIN pg_catalog.pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
        WHERE x.indrelid = c.oid AND x.indisunique AND x.indimmediate AND x.indisvalid AND x.indnkeyatts = 1
          AND x.indpred IS NULL AND x.indexprs IS NULL AND a.attname = 'id') AS unique_id
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $schema AND c.relname = $table
  ) AS r ON true`)

/**
 * The tables in which a version that recorded no placements wrote its rows, and deleted stray copies of them: the
 * ordinary tables of the schema with a text id and name, age and country columns, whose name a spec.table can have
 * (`tablePattern`). That version also left out the tables PG_TABLE_ALLOWLIST refused; the migration does not, since
 * an earlier allowlist may have admitted them. Only those this user may read.
 */
export const earlierRowTables = defineStatement('find the tables of a version without placements', ['schema', 'tablePattern'], () => `SELECT c.relname
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = $schema AND c.relkind = 'r' AND NOT c.relispartition
    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid)
    AND c.relname ~ $tablePattern AND has_table_privilege(c.oid, 'SELECT')
    AND (SELECT count(*) FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      AND (a.attname IN ('name', 'age', 'country') OR (a.attname = 'id' AND a.atttypid IN ('text'::regtype, 'varchar'::regtype)))) = 4
  ORDER BY c.relname`)

/**
 * A part of the placement and the finalize: the tables recorded as holding the row of `$id`, among those `owner` (a
 * condition on `r`, the placement) selects, whose name a spec.table can have (`$tablePattern`), and that are still
 * ordinary tables of `$schema`. A record of a table dropped since is stale: the row went with the table.
 */
const recordedTables = (schema: string, owner: string): string => `SELECT r.table_name
  FROM ${placements(schema)} r
  WHERE r.id = $id AND ${owner} AND r.table_name ~ $tablePattern
    AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = to_regclass(format('%I.%I', $schema::text, r.table_name)) AND c.relkind = 'r')
  ORDER BY r.table_name`

/**
 * A part of the placement and the finalize: one DELETE of the row from each of `tables`, the i-th only when the
 * i-th element of `$tables` (the same names, as an array) is among `recorded`, and the statement goes on (`go`).
 */
const deleteFromEach = (schema: string, tables: readonly string[]): string => tables.map((table, i) => `,
       deleted_${i} AS (DELETE FROM ONLY ${qualified(schema, table)} WHERE id = $id AND EXISTS (SELECT 1 FROM go)
         AND EXISTS (SELECT 1 FROM recorded WHERE table_name = ($tables::text[])[${i + 1}]))`).join('')

/**
 * A part of both placements: `recorded_here`, the row recorded in `$table` for this object, once for each row of
 * `source` (one when the statement wrote), the uid replaced in a record of another object.
 */
const recordedHere = (schema: string, source: string): string => `recorded_here AS (
         INSERT INTO ${placements(schema)} AS r (id, table_name, uid) SELECT $id, $table, $uid FROM ${source}
         ON CONFLICT (id, table_name) DO UPDATE SET uid = EXCLUDED.uid WHERE r.uid IS DISTINCT FROM EXCLUDED.uid
       )`

/** A part of the read and the update in place: the row is recorded in `$table` as this object's, which no tombstone stops. */
const settled = (schema: string): string =>
  `EXISTS (SELECT 1 FROM ${placements(schema)} r WHERE r.id = $id AND r.table_name = $table AND r.uid = $uid)
   AND NOT EXISTS (SELECT 1 FROM ${tombstones(schema)} WHERE object_uid = $uid)`

/**
 * The row where the last acknowledged sync put it, if it comes from the table found fit (`$oid`): whether it matches
 * the spec, and whether it is settled there (recorded as this object's, and not tombstoned). No row when the table
 * holds none of that id.
 */
export interface ReadRowReport { sameTable: boolean, matched: boolean, settled: boolean }

export const readRow = defineStatement('read the row in place', ['id', 'name', 'age', 'country', 'uid', 'oid', 'table'], ({ schema, table }: OnTable) =>
  `SELECT o.tableoid = $oid::oid AS "sameTable", (o.name, o.age, o.country) = ($name::text, $age::integer, $country::text) AS matched,
     ${settled(schema)} AS settled
   FROM ONLY ${qualified(schema, table)} AS o WHERE o.id = $id`)

/** Updates the row in place when it differs from the spec and is settled there; reports whether it reads back as sent. */
export interface UpdateRowReport { written: number, kept: boolean }

export const updateRow = defineStatement('update the row in place', ['id', 'name', 'age', 'country', 'uid', 'oid', 'table'], ({ schema, table }: OnTable) =>
  `WITH written AS (
     UPDATE ONLY ${qualified(schema, table)} AS t SET name = $name, age = $age, country = $country
     WHERE t.id = $id AND t.tableoid = $oid::oid AND ${settled(schema)}
       AND (t.name, t.age, t.country) IS DISTINCT FROM ($name::text, $age::integer, $country::text)
     RETURNING t.name, t.age, t.country
   )
   SELECT count(*)::int AS written, coalesce(bool_and((name, age, country) = ($name::text, $age::integer, $country::text)), false) AS kept FROM written`)

/**
 * Places the row in `table`, after the row's advisory lock: the write is made only if `$qualifiedTable` still names
 * the table found fit (`$oid`). The row is written, deleted from those of `others` (`$tables`, the same names as an
 * array) recorded as holding it, and recorded in `$table` alone, for this object, only if every other table
 * recorded as holding it is among `others`: a table of `others` that holds a row the hook did not write keeps it.
 * It reports them. A tombstone stops it, unless the sync carries the token (`$releaseToken`) that released the
 * object: then the tombstone goes with the write.
 *
 * Its parts: `tombstone`, the object's; `guard`, what may stop it; `recorded`, the other tables that hold the row;
 * `expected`, whether they are among `others`; `go`, one row when it writes; `written`, the upsert; `deleted_<i>`,
 * the row deleted from each of `others`; `unrecorded` and `recorded_here`, the records moved here; `released`, the
 * tombstone lifted.
 */
export interface PlaceRowReport {
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

export const placeRow = defineStatement('place the row',
  ['id', 'name', 'age', 'country', 'uid', 'oid', 'qualifiedTable', 'table', 'tables', 'schema', 'tablePattern', 'releaseToken'],
  ({ schema, table, others }: OnTable & { others: readonly string[] }) =>
    `WITH tombstone AS (SELECT release_token, NOT coalesce(release_token = $releaseToken, false) AS finalized FROM ${tombstones(schema)} WHERE object_uid = $uid),
       guard AS (SELECT to_regclass($qualifiedTable) = $oid::oid AS "sameTable", coalesce((SELECT finalized FROM tombstone), false) AS finalized),
       recorded AS (${recordedTables(schema, 'r.table_name <> $table')}),
       expected AS (SELECT ARRAY(SELECT table_name FROM recorded)::text[] <@ $tables::text[] AS expected),
       go AS (SELECT 1 FROM guard, expected WHERE guard."sameTable" AND NOT guard.finalized AND expected.expected),
       written AS (
         INSERT INTO ${qualified(schema, table)} AS t (id, name, age, country)
         SELECT $id, $name, $age, $country FROM go
         ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country
         WHERE (t.name, t.age, t.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)
         RETURNING t.name, t.age, t.country
       )${deleteFromEach(schema, others)},
       unrecorded AS (DELETE FROM ${placements(schema)} WHERE id = $id AND table_name <> $table AND EXISTS (SELECT 1 FROM go)),
       ${recordedHere(schema, 'go')},
       released AS (DELETE FROM ${tombstones(schema)} WHERE object_uid = $uid AND EXISTS (SELECT 1 FROM go))
       SELECT guard."sameTable", guard.finalized, (SELECT release_token FROM tombstone) AS "releaseToken", expected.expected,
         (SELECT count(*) FROM written)::int AS written,
         EXISTS (SELECT 1 FROM written w WHERE (w.name, w.age, w.country) = ($name::text, $age::integer, $country::text)) AS kept,
         EXISTS (SELECT 1 FROM ONLY ${qualified(schema, table)} o WHERE o.id = $id) AS existed,
         EXISTS (SELECT 1 FROM ONLY ${qualified(schema, table)} o WHERE o.id = $id AND (o.name, o.age, o.country) = ($name::text, $age::integer, $country::text)) AS matched,
         ARRAY(SELECT table_name FROM recorded)::text[] AS tables
       FROM guard, expected`)

/**
 * The placement of a new row that nothing else has a say on, as at an object's first sync: after the row's advisory
 * lock, when `$qualifiedTable` still names the table found fit (`$oid`), the object has no tombstone, no other table
 * is recorded as holding the row and `table` holds no row of that id, it inserts the row and records it in `$table`,
 * for this object. Otherwise it writes nothing, and the store runs `placeRow`, which deals with each of those: a row
 * already there is then compared with the spec, which this statement never needs to read.
 *
 * Its parts: `inserted`, the row; `recorded_here`, the record.
 */
export interface PlaceRowAloneReport { sameTable: boolean, written: number, kept: boolean }

export const placeRowAlone = defineStatement('place a row nothing else holds',
  ['id', 'name', 'age', 'country', 'uid', 'oid', 'qualifiedTable', 'table'],
  ({ schema, table }: OnTable) =>
    `WITH inserted AS (
         INSERT INTO ${qualified(schema, table)} AS t (id, name, age, country)
         SELECT $id::text, $name::text, $age::integer, $country::text WHERE to_regclass($qualifiedTable) = $oid::oid
           AND NOT EXISTS (SELECT FROM ${tombstones(schema)} WHERE object_uid = $uid)
           AND NOT EXISTS (SELECT FROM ${placements(schema)} WHERE id = $id AND table_name <> $table)
         ON CONFLICT (id) DO NOTHING
         RETURNING t.name, t.age, t.country
       ),
       ${recordedHere(schema, 'inserted')}
       SELECT to_regclass($qualifiedTable) = $oid::oid AS "sameTable", (SELECT count(*) FROM inserted)::int AS written,
         EXISTS (SELECT FROM inserted w WHERE (w.name, w.age, w.country) = ($name::text, $age::integer, $country::text)) AS kept`)

/** Whose row a finalize deletes: the object's, or one adopted from an earlier version (no owner), which any object of that id owns. */
const OWNED = '(r.uid = $uid OR r.uid IS NULL)'

/**
 * A part of both finalizes: the tombstone, inserted or refreshed, with the release token (`$releaseToken`) of an
 * object that is not being deleted (`$deleting`), which a repeated release keeps and a deletion clears. Expired
 * tombstones are purged, never the object's own: a purge and a refresh of the same tombstone in one statement would
 * leave it deleted, since each part sees the table as it was before the statement.
 */
const tombstoneParts = (schema: string): string =>
  `expired AS (DELETE FROM ${tombstones(schema)} WHERE finalized_at < now() - make_interval(secs => ${TOMBSTONE_RETENTION_SECONDS}) AND object_uid <> $uid),
       tombstone AS (
         INSERT INTO ${tombstones(schema)} AS t (object_uid, id, release_token) SELECT $uid, $id, CASE WHEN $deleting::boolean THEN NULL ELSE $releaseToken::text END FROM expected WHERE expected
         ON CONFLICT (object_uid) DO UPDATE SET finalized_at = now(), release_token = CASE WHEN $deleting::boolean THEN NULL ELSE t.release_token END
         RETURNING t.release_token
       )`

/**
 * The finalize of deletionPolicy Delete, after the row's advisory lock: when each table recorded as holding the row
 * for this object is among `tables` (`$tables`, the same names as an array), it tombstones the uid and, if the uid
 * was not tombstoned before, deletes the row from each of them, and their records. It reports them.
 */
export interface FinalizeReport {
  /** Every table recorded as holding the object's row was one the statement could delete it from; otherwise it wrote nothing. */
  expected: boolean
  /** Those tables. */
  tables: string[]
  /** The tombstone's release token: set when the object was not being deleted. */
  releaseToken: string | null
}

export const finalizeDeleting = defineStatement('finalize, deleting the row',
  ['id', 'uid', 'schema', 'tablePattern', 'deleting', 'releaseToken', 'tables'],
  ({ schema, tables }: InSchema & { tables: readonly string[] }) =>
    `WITH recorded AS (${recordedTables(schema, OWNED)}),
       previous AS (SELECT 1 FROM ${tombstones(schema)} WHERE object_uid = $uid),
       expected AS (SELECT ARRAY(SELECT table_name FROM recorded)::text[] <@ $tables::text[] AS expected),
       go AS (SELECT 1 FROM expected WHERE expected AND NOT EXISTS (SELECT 1 FROM previous)),
       ${tombstoneParts(schema)}${deleteFromEach(schema, tables)},
       unrecorded AS (DELETE FROM ${placements(schema)} r WHERE r.id = $id AND ${OWNED} AND EXISTS (SELECT 1 FROM go))
       SELECT expected, ARRAY(SELECT table_name FROM recorded)::text[] AS tables, (SELECT release_token FROM tombstone) AS "releaseToken" FROM expected`)

/** The finalize of deletionPolicy Orphan: it only tombstones the uid, and reports the tables that keep the row. */
export const finalizeOrphaning = defineStatement('finalize, keeping the row',
  ['id', 'uid', 'schema', 'tablePattern', 'deleting', 'releaseToken'],
  ({ schema }: InSchema) =>
    `WITH recorded AS (${recordedTables(schema, OWNED)}),
       expected AS (SELECT true AS expected),
       ${tombstoneParts(schema)}
       SELECT expected, ARRAY(SELECT table_name FROM recorded)::text[] AS tables, (SELECT release_token FROM tombstone) AS "releaseToken" FROM expected`)

/** The hook's own tables' lock, which replicas that start together take in turn to migrate them once. */
export const lockHookTables = defineStatement('lock the hook\'s tables', ['schema'], () =>
  'SELECT pg_advisory_xact_lock(hashtextextended(\'postgres-writer tables \' || $schema, 0))')

export function createSchema (schema: string): string {
  return `CREATE SCHEMA IF NOT EXISTS ${quote(schema)}`
}

/** The DDL of a table the hook creates itself (PG_AUTO_CREATE_TABLES=true): the columns of ROW_TABLE_COLUMNS. */
export function rowTableDdl (schema: string, table: string): string {
  const columns = ROW_TABLE_COLUMNS.map(({ name, type }) => `${name} ${type} ${name === 'id' ? 'PRIMARY KEY' : 'NOT NULL'}`)
  return `CREATE TABLE IF NOT EXISTS ${qualified(schema, table)} (${columns.join(', ')})`
}

/**
 * The DDL of the hook's own tables. A tombstone's `release_token` is set when the object was finalized while not
 * being deleted (it stopped matching the DecoratorController's selector): a sync that carries it back in the status
 * was sent after that finalize, and may write again.
 */
export function hookTablesDdl (schema: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${tombstones(schema)} (object_uid text PRIMARY KEY, id text NOT NULL, finalized_at timestamptz NOT NULL DEFAULT now(), release_token text)`,
    `CREATE INDEX IF NOT EXISTS ${quote(`${TOMBSTONES_TABLE}-finalized-at`)} ON ${tombstones(schema)} (finalized_at)`,
    placementsDdl(schema)
  ]
}

function placementsDdl (schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${placements(schema)} (id text NOT NULL, table_name text NOT NULL, uid text, PRIMARY KEY (id, table_name))`
}

/**
 * The migration from a version that recorded no placements, in one transaction after the lock on the tombstones
 * table, which waits for every statement of that version to end: each row of every table that version would have
 * taken for a PostgresWriter table (`earlierRowTables`) is recorded, with no owner. Its tombstones' `uid` column is
 * renamed, so that replicas of that version still running (a rolling update) fail from then on, instead of writing
 * rows that no placement records.
 */
export function migrationDdl (schema: string, earlierTables: readonly string[]): string[] {
  return [
    `LOCK TABLE ${tombstones(schema)} IN ACCESS EXCLUSIVE MODE`,
    placementsDdl(schema),
    ...earlierTables.map((table) =>
      `INSERT INTO ${placements(schema)} (id, table_name) SELECT id, '${table}' FROM ONLY ${qualified(schema, table)} WHERE id IS NOT NULL ON CONFLICT DO NOTHING`),
    `ALTER TABLE ${tombstones(schema)} RENAME COLUMN uid TO object_uid`,
    `ALTER TABLE ${tombstones(schema)} ADD COLUMN IF NOT EXISTS release_token text`
  ]
}

/**
 * The way back to a version that recorded no placements, after the migration: that version's tombstones column `uid`
 * again, and no placement records, which it would neither read nor keep up. Run in one transaction, once no replica
 * of this version runs (one would migrate the tables again). Tombstones keep holding. Upgrading again migrates the
 * tables as the first time, every row then owned by no object.
 */
export function downgradeDdl (schema: string): string[] {
  return [
    `LOCK TABLE ${tombstones(schema)} IN ACCESS EXCLUSIVE MODE`,
    `ALTER TABLE ${tombstones(schema)} RENAME COLUMN object_uid TO uid`,
    `DROP TABLE ${placements(schema)}`
  ]
}

/**
 * The plan's reads (dev/plan/postgres-writer.ts), in one read-only transaction: the placements of the planned rows'
 * ids (`$ids`), the tombstones of the planned objects (`$uids`), and the rows of those ids in a table, with the
 * columns of the row it has (`columns`).
 */
export const readPlacements = defineStatement('read the placements of rows', ['ids'], ({ schema }: InSchema) =>
  `SELECT id, table_name, uid FROM ${placements(schema)} WHERE id = ANY($ids::text[]) ORDER BY id, table_name`)

export const readTombstones = defineStatement('read the tombstones of objects', ['uids'], ({ schema }: InSchema) =>
  `SELECT object_uid, id, release_token FROM ${tombstones(schema)} WHERE object_uid = ANY($uids::text[])`)

export const readRows = defineStatement('read rows of a table', ['ids'], ({ schema, table, columns }: OnTable & { columns: readonly string[] }) =>
  `SELECT id${columns.map((column) => `, ${quote(column)}`).join('')} FROM ONLY ${qualified(schema, table)} WHERE id = ANY($ids::text[])`)
