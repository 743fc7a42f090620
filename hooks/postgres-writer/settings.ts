import { Type } from '@sinclair/typebox'
import { controllerSettings, flag, list, text } from '../framework/index.js'
import { SQL_IDENTIFIER_PATTERN } from './sql-identifier.js'
import type { TableRules } from './sync.js'

/** PostgresWriter's own settings: where its rows go, which tables may hold them, and whether it creates them. */
export interface PostgresWriterSettings extends TableRules {
  /** Create a missing table, and the hook's own tables (PG_AUTO_CREATE_TABLES). */
  autoCreateTables: boolean
}

export const postgresWriterSettings = controllerSettings({
  title: 'PostgresWriter',
  text: 'Which tables custom resources may write, and where ([PostgresWriter](postgres-writer.md) says what the hook guarantees).',
  variables: {
    PG_SCHEMA: text({
      default: 'public',
      pattern: SQL_IDENTIFIER_PATTERN,
      expected: 'a lowercase SQL identifier (letters, digits, _; at most 63)',
      summary: 'schema of the PostgresWriter tables',
      details: 'Every table a PostgresWriter names in `spec.table` is in this schema, and so are the hook\'s own two tables, `"postgres-writer-rows"` (where each row was written) and `"postgres-writer-tombstones"` (finalized objects). The schema is created when missing and `PG_AUTO_CREATE_TABLES` allows. The hook looks in this schema alone: before changing it, see [PostgresWriter](postgres-writer.md#changing-pg_schema).'
    }),
    PG_AUTO_CREATE_TABLES: flag({
      default: true,
      summary: 'create a missing table',
      details: 'A table that `spec.table` names and that does not exist is created as `(id text primary key, name text, age integer, country text)`, and so are the hook\'s own two tables. With `false`, a missing table is reported on the resource (`TableMissing`) with the statement that would create it, and nothing is written; the hook\'s own tables, when missing, are reported the same way ([PostgresWriter](postgres-writer.md#the-hooks-own-tables)).'
    }),
    PG_TABLE_ALLOWLIST: Type.Optional(list(Type.String({ pattern: SQL_IDENTIFIER_PATTERN, expected: 'a lowercase SQL identifier' }), {
      example: 'students,graduates',
      summary: 'comma-separated tables that custom resources may write; any when unset',
      details: 'A PostgresWriter whose `spec.table` is not in the list gets `Ready=False` with reason `TableNotAllowed`, and no SQL runs for it. A row the hook wrote earlier into a table the list no longer admits is still deleted when its resource goes.'
    }))
  }
}, (settings): PostgresWriterSettings => ({
  schema: settings.PG_SCHEMA,
  autoCreateTables: settings.PG_AUTO_CREATE_TABLES,
  tableAllowlist: settings.PG_TABLE_ALLOWLIST === undefined ? undefined : new Set(settings.PG_TABLE_ALLOWLIST)
}))
