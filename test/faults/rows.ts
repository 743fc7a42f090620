import assert from 'node:assert/strict'
import type pg from 'pg'
import { rowsById } from '../helpers/postgres-writer-rows.js'
import type { Row, Writer } from './writers.js'

/** The invariant of the fault tests: the rows in PostgreSQL are exactly those of the PostgresWriters that exist. */

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
