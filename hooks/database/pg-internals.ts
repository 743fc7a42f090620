import { connect } from 'node:net'
import pg from 'pg'

/**
 * Everything this server takes from pg beyond its documented API, in one place; the rest of the code uses only what
 * pg documents. test/database/pg-internals.test.ts checks this contract against the pinned pg, and
 * `npm run test:newest-pg` against the newest pg 8.x the registry serves, so that an upgrade that breaks it fails
 * there, naming what changed.
 *
 * The contract:
 * - `client.query(submittable)` calls `submit(connection)` with the client's Connection, which writes protocol
 *   messages with `parse({ name, text, types }, false)`, `bind({ statement, values }, false)`,
 *   `describe({ type: 'P', name: '' }, false)`, `execute({ portal: '' }, false)` and `sync()`, and has a `stream`
 *   with `cork()` and `uncork()`; an Execute without a Describe before it is answered with DataRows alone;
 * - the Connection emits `parseComplete` for each ParseComplete message;
 * - the client calls the submittable's `handleRowDescription({ fields: [{ name, dataTypeID }] })`,
 *   `handleDataRow({ fields: [text | null] })`, `handleCommandComplete({ text })` (the command tag),
 *   `handleEmptyQuery()`, `handleError(error)`, `handleReadyForQuery()`, and `handleCopyInResponse(connection)`, on
 *   which the Connection's `sendCopyFail(message)` and `sync()` end the copy;
 * - a connected client has the BackendKeyData in `processID` and `secretKey` (32-bit integers), and the server it
 *   reached in `host` and `port`.
 */

export type Value = string | number | null | readonly string[]

export interface Statement {
  text: string
  values?: readonly Value[]
  /** A named prepared statement: parsed once per connection, bound and executed by every later use. */
  name?: string
}

export interface StatementResult<R> {
  rows: R[]
  /** From the command tag: rows inserted, updated, deleted or selected. */
  rowCount: number
}

/** The part of pg's Connection that a batch writes with, and the event it listens to. */
interface Connection {
  stream: { cork: () => void, uncork: () => void }
  parse: (query: { name: string, text: string, types: [] }, more: boolean) => void
  bind: (config: { statement: string, values: Array<string | null> }, more: boolean) => void
  describe: (message: { type: 'P', name: string }, more: boolean) => void
  execute: (config: { portal: string }, more: boolean) => void
  sync: () => void
  sendCopyFail: (message: string) => void
  on: (event: 'parseComplete', listener: () => void) => void
  off: (event: 'parseComplete', listener: () => void) => void
}

interface Field { name: string, dataTypeID: number }

const parsers = new Map<number, (text: string) => unknown>()
function parserOf (oid: number): (text: string) => unknown {
  let parse = parsers.get(oid)
  if (parse === undefined) parsers.set(oid, parse = pg.types.getTypeParser(oid, 'text') as (text: string) => unknown)
  return parse
}

/** A parameter as PostgreSQL's text format has it: an array as an array literal. */
function parameter (value: Value): string | null {
  if (value === null || typeof value === 'string') return value
  if (typeof value === 'number') return String(value)
  return `{${value.map((item) => `"${item.replace(/["\\]/g, '\\$&')}"`).join(',')}}`
}

/**
 * The named statements each client has parsed on its connection (PostgreSQL keeps them until the connection ends),
 * with the fields of their rows once an answer described them: a statement whose fields are known is sent without a
 * Describe, and its rows are read with those. They hold while the statement does: PostgreSQL refuses to run a
 * prepared statement whose result changed shape (prepared-statements.ts). Only batches name statements, so this is
 * all that is parsed under these names.
 */
const parsedBy = new WeakMap<pg.ClientBase, Map<string, Field[] | undefined>>()

/**
 * Several statements sent in one write and answered in one go, with one Sync at the end (the extended query protocol's
 * pipelining: https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-PIPELINING). PostgreSQL runs
 * them in order; outside BEGIN … COMMIT they form one implicit transaction, committed at the Sync, and the first error
 * skips the rest and rolls that transaction back. In READ COMMITTED each statement takes its own snapshot when it
 * starts, after the statements before it finished: a statement after `pg_advisory_xact_lock` sees what was committed
 * while it waited for the lock, as in an explicit transaction.
 *
 * pg's own queries end each statement with a Sync of its own, and its pipeline mode (which refuses a submittable
 * other than its own Query) does too: `BEGIN`, lock, statement, `COMMIT` are then four answers and four transaction
 * boundaries, which cost the database and this process more CPU per call than one batch.
 */
class StatementBatch implements pg.Submittable {
  private readonly results: Array<StatementResult<pg.QueryResultRow>> = []
  /** The fields of each statement's rows, known before its answer when it is sent without a Describe. */
  private readonly described: Array<Field[] | undefined> = []
  private fields: Field[] = []
  private rows: pg.QueryResultRow[] = []
  /**
   * Every Parse this batch sent, in order, unnamed ones ('') included: PostgreSQL answers each with a ParseComplete,
   * which confirms the first one left, and skips those after an error.
   */
  private readonly parsing: string[] = []
  private connection: Connection | undefined

  constructor (
    private readonly statements: readonly Statement[],
    private readonly parsed: Map<string, Field[] | undefined>,
    private readonly settle: (error: Error | undefined, results: Array<StatementResult<pg.QueryResultRow>>) => void
  ) {}

  submit (pgConnection: pg.Connection): void {
    const connection = this.connection = pgConnection as unknown as Connection
    connection.stream.cork()
    try {
      for (const { text, values = [], name = '' } of this.statements) {
        if (name === '' || (!this.parsed.has(name) && !this.parsing.includes(name))) {
          connection.parse({ name, text, types: [] }, false)
          this.parsing.push(name)
        }
        connection.bind({ statement: name, values: values.map(parameter) }, false)
        const fields = name === '' ? undefined : this.parsed.get(name)
        if (fields === undefined) connection.describe({ type: 'P', name: '' }, false)
        this.described.push(fields)
        connection.execute({ portal: '' }, false)
      }
      connection.sync()
    } finally {
      connection.stream.uncork()
    }
    this.fields = this.described[0] ?? []
    if (this.parsing.some((name) => name !== '')) connection.on('parseComplete', this.parseCompleted)
  }

  private readonly parseCompleted = (): void => {
    const name = this.parsing.shift()
    if (name !== undefined && name !== '') this.parsed.set(name, undefined)
  }

  /** The statement answered: its fields are kept for its next use, and the next statement's are set if known. */
  private answered (rows: pg.QueryResultRow[], rowCount: number): void {
    const { name = '' } = this.statements[this.results.length] ?? {}
    if (name !== '' && this.parsed.has(name)) this.parsed.set(name, this.fields)
    this.results.push({ rows, rowCount })
    this.fields = this.described[this.results.length] ?? []
    this.rows = []
  }

  private done (): void {
    this.connection?.off('parseComplete', this.parseCompleted)
  }

  handleRowDescription (message: { fields: Field[] }): void {
    this.fields = message.fields
  }

  handleDataRow (message: { fields: Array<string | null> }): void {
    const row: pg.QueryResultRow = {}
    for (let i = 0; i < this.fields.length; i++) {
      const { name, dataTypeID } = this.fields[i] as Field
      const text = message.fields[i]
      row[name] = text === null || text === undefined ? null : parserOf(dataTypeID)(text)
    }
    this.rows.push(row)
  }

  handleCommandComplete (message: { text: string }): void {
    const count = Number(message.text.slice(message.text.lastIndexOf(' ') + 1))
    this.answered(this.rows, Number.isInteger(count) ? count : 0)
  }

  handleEmptyQuery (): void {
    this.answered([], 0)
  }

  handleError (error: Error): void {
    this.done()
    this.settle(error, this.results)
  }

  handleReadyForQuery (): void {
    this.done()
    this.settle(undefined, this.results)
  }

  handlePortalSuspended (): void {}

  handleCopyInResponse (pgConnection: pg.Connection): void {
    // PostgreSQL ignores a Sync that arrives during COPY FROM STDIN (the batch's own came before it), and answers the
    // CopyFail's error only at the next one.
    const connection = pgConnection as unknown as Connection
    connection.sendCopyFail('no COPY data in a batch')
    connection.sync()
  }

  handleCopyData (): void {}
}

/**
 * Runs `statements` on `db` in one round trip, as one implicit transaction unless they are inside BEGIN … COMMIT, and
 * resolves with each one's rows; rejects with the first error, after which PostgreSQL ran none of the rest.
 */
export async function runBatch (db: pg.ClientBase, statements: readonly Statement[]): Promise<Array<StatementResult<pg.QueryResultRow>>> {
  const parsed = parsedOn(db)
  return await new Promise((resolve, reject) => {
    db.query(new StatementBatch(statements, parsed, (error, results) => { if (error === undefined) resolve(results); else reject(error) }))
  })
}

function parsedOn (db: pg.ClientBase): Map<string, Field[] | undefined> {
  let parsed = parsedBy.get(db)
  if (parsed === undefined) parsedBy.set(db, (parsed = new Map()))
  return parsed
}

interface BackendKey { processID: number | null, secretKey: number | null, host: string, port: number }

/**
 * Sends PostgreSQL's CancelRequest for the statement `db`'s backend is running, on a connection of its own (which
 * needs neither a login nor a free connection slot), as libpq's PQcancel does. Settles once PostgreSQL has closed that
 * connection, which it does after it signalled the backend, or after `waitMs`: best effort, since nothing says
 * whether the statement was still running.
 */
export async function cancelRunningStatement (db: pg.ClientBase, waitMs = 500): Promise<void> {
  const { processID, secretKey, host, port } = db as unknown as BackendKey
  if (processID === null || secretKey === null) return
  const request = Buffer.alloc(16)
  request.writeInt32BE(16, 0)
  request.writeInt32BE(80877102, 4) // the CancelRequest code
  request.writeInt32BE(processID, 8)
  request.writeInt32BE(secretKey, 12)
  const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host)
  socket.setTimeout(waitMs, () => socket.destroy())
  socket.on('error', () => {})
  socket.on('connect', () => { socket.end(request) })
  await new Promise((resolve) => socket.once('close', resolve))
}
