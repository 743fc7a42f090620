import pg from 'pg'
import { type TestApp } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { fixture } from '../helpers/fixtures.js'
import { rowsById, type FoundRow } from '../helpers/postgres-writer-rows.js'

/** PostgresWriter hook calls through `app.inject()`, and the rows they leave, for the PostgresWriter unit tests. */

/** The row id of the fixtures' object. */
export const ID = 'default/sample-student'

/** The columns of a table that can hold the row, as a test creates one itself. */
export const ROW_COLUMNS = 'id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, country text NOT NULL'

export interface HookAnswer {
  statusCode: number
  json: any
  ms: number
}

export async function callHook (t: TestApp, body: unknown, hook: 'sync' | 'finalize' = 'sync'): Promise<HookAnswer> {
  const started = performance.now()
  const response = await t.app.inject({ method: 'POST', url: `/postgres-writer/${hook}`, payload: body as object })
  return { statusCode: response.statusCode, json: response.json(), ms: performance.now() - started }
}

/** The Ready condition of an answer, as `<status> <reason>`: `True RowWritten`, `False TableIncompatible`. */
export function readyOf (answer: HookAnswer): string {
  const ready = answer.json.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')
  return `${ready?.status} ${ready?.reason}`
}

export function messageOf (answer: HookAnswer): string {
  return answer.json.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.message ?? ''
}

interface RequestChanges {
  objectName?: string
  uid?: string
  spec?: Record<string, unknown>
  /** The table the status names; null: no status at all. */
  statusTable?: string | null
  /** The whole status, as an earlier answer left it. */
  status?: Record<string, unknown>
  /** A finalize of an object that is not being deleted: it stopped matching the DecoratorController's selector. */
  notDeleting?: true
}

/** A request from the fixture `name`, for the object `objectName` (default: the fixture's) with `spec` merged in. */
export function request (name: 'sync-create' | 'sync-resync' | 'sync-age-changed' | 'sync-table-moved' | 'finalize', changes: RequestChanges = {}): Record<string, any> {
  const body = fixture('postgres-writer', name)
  const { object } = body
  if (changes.objectName !== undefined) object.metadata.name = changes.objectName
  if (changes.uid !== undefined) object.metadata.uid = changes.uid
  Object.assign(object.spec, changes.spec ?? {})
  if (changes.statusTable === null) delete object.status
  else if (changes.statusTable !== undefined) object.status = { ...object.status, table: changes.statusTable }
  if (changes.status !== undefined) object.status = changes.status
  if (changes.notDeleting === true) {
    delete object.metadata.deletionTimestamp
    delete object.metadata.deletionGracePeriodSeconds
  }
  return body
}

/** Every row of `table` in the test's schema (or `schema`), ordered by id. */
export async function rows (t: TestApp, table: string, schema = t.schema): Promise<Array<{ id: string, name: string, age: number, country: string }>> {
  const result = await (t.pool as pg.Pool).query(`SELECT id, name, age, country FROM "${schema}"."${table}" ORDER BY id`)
  return result.rows
}

/** Every row in every table of the test's schema but the hook's own, wherever it is, ordered by table and id. */
export async function rowsEverywhere (t: TestApp): Promise<FoundRow[]> {
  const found = [...(await rowsById(t.pool as pg.Pool, t.schema)).values()].flat()
  return found.sort((a, b) => a.table.localeCompare(b.table) || a.id.localeCompare(b.id))
}

/** Runs SQL (several statements, no parameters) as the tests' superuser, on a connection of its own, in the test's schema. */
export async function admin (t: TestApp, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() })
  await client.connect()
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${t.schema}"; SET search_path TO "${t.schema}"; ${sql}`)
  } finally {
    await client.end()
  }
}
