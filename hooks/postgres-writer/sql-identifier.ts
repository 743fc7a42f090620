/**
 * A lowercase SQL identifier: what PG_SCHEMA and PostgresWriter's tables must be, so that a name means the same quoted
 * and unquoted, and fits PostgreSQL's 63 bytes.
 */
export const SQL_IDENTIFIER_PATTERN = '^[a-z_][a-z0-9_]{0,62}$'

const SQL_IDENTIFIER = new RegExp(SQL_IDENTIFIER_PATTERN)

export function isSqlIdentifier (name: string): boolean {
  return SQL_IDENTIFIER.test(name)
}
