import type pg from 'pg'

/** A PostgresWriter row as a test finds it in PostgreSQL, with the table that holds it. */
export interface FoundRow {
  id: string
  name: string
  age: number
  country: string
  table: string
}

/**
 * Every row of every table of `schema` that has an age column (all but the hook's own tables), by id: the rows wherever
 * they are, not only in the tables a test expects.
 */
export async function rowsById (db: pg.Client | pg.Pool, schema: string): Promise<Map<string, FoundRow[]>> {
  const tables = await db.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'age' ORDER BY table_name", [schema])
  const byId = new Map<string, FoundRow[]>()
  for (const { table_name: table } of tables.rows) {
    const rows = await db.query<Omit<FoundRow, 'table'>>(`SELECT id, name, age, country FROM "${schema}"."${table}"`)
    for (const row of rows.rows) byId.set(row.id, [...byId.get(row.id) ?? [], { ...row, table }])
  }
  return byId
}
