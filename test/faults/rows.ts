import assert from 'node:assert/strict'
import type pg from 'pg'
import type { Row, Writer } from './writers.js'

/** The invariant of the fault tests: the rows in PostgreSQL are exactly those of the PostgresWriters that exist. */

/** Every row of every table of the schema that has an age column (all but the hook's tombstones), by id. */
export async function rowsById (client: pg.Client, schema: string): Promise<Map<string, Row[]>> {
  const tables = await client.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'age' ORDER BY table_name", [schema])
  const byId = new Map<string, Row[]>()
  for (const { table_name: table } of tables.rows) {
    const rows = await client.query<Omit<Row, 'table'>>(`SELECT id, name, age, country FROM "${schema}"."${table}"`)
    for (const row of rows.rows) byId.set(row.id, [...byId.get(row.id) ?? [], { ...row, table }])
  }
  return byId
}

/**
 * The invariant: every writer that exists has exactly one row, in exactly one table (its spec's), with its spec's
 * values; every deleted one has none; and the schema holds no other row. Returns the number of rows checked.
 */
export async function assertRowsMatchWriters (client: pg.Client, schema: string, writers: readonly Writer[]): Promise<number> {
  const terminating = writers.filter((w) => w.terminating).map((w) => w.id)
  assert.deepEqual(terminating, [], 'writers still terminating: their finalize never succeeded')
  const actual = await rowsById(client, schema)
  const expected = new Map<string, Row[]>()
  for (const writer of writers) {
    const row = writer.expectedRow()
    if (row !== undefined) expected.set(writer.id, [row])
  }
  const sorted = (rows: Map<string, Row[]>): Array<[string, Row[]]> => [...rows].sort(([a], [b]) => a.localeCompare(b))
  assert.deepEqual(sorted(actual), sorted(expected), 'the rows in PostgreSQL differ from the PostgresWriters that exist')
  return [...actual.values()].reduce((count, rows) => count + rows.length, 0)
}
