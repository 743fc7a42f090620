import pg from 'pg'

/**
 * Several statements sent in one write and answered in one go, with one Sync at the end (the extended query protocol's
 * pipelining: https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-PIPELINING). PostgreSQL runs
 * them in order; outside BEGIN … COMMIT they form one implicit transaction, committed at the Sync, and the first error
 * skips the rest and rolls that transaction back. In READ COMMITTED each statement takes its own snapshot when it
 * starts, after the statements before it finished: a statement after `pg_advisory_xact_lock` sees what was committed
 * while it waited for the lock, as in an explicit transaction.
 *
 * pg's own queries end each statement with a Sync of its own: one answer, one read and one transaction boundary
 * each. This is a pg Submittable (the interface pg-cursor uses) on a client without pg's `pipeline` mode, which
 * refuses Submittables other than its own Query.
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

/** What pg's Connection keeps of named statements; its Query objects read and write the same. */
interface Connection extends pg.Connection {
  parsedStatements: Record<string, string>
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

class StatementBatch implements pg.Submittable {
  private readonly results: Array<StatementResult<pg.QueryResultRow>> = []
  private fields: Field[] = []
  private rows: pg.QueryResultRow[] = []
  /**
   * Every Parse this batch sent, in order, unnamed ones ('') included: PostgreSQL answers each with a ParseComplete,
   * which confirms the first one left, and skips those after an error.
   */
  private readonly parsing: Array<{ name: string, text: string }> = []
  private connection: Connection | undefined

  constructor (
    private readonly statements: readonly Statement[],
    private readonly settle: (error: Error | undefined, results: Array<StatementResult<pg.QueryResultRow>>) => void
  ) {}

  submit (pgConnection: pg.Connection): void {
    const connection = this.connection = pgConnection as Connection
    connection.stream.cork()
    try {
      for (const { text, values = [], name = '' } of this.statements) {
        if (name === '' || (connection.parsedStatements[name] === undefined && !this.parsing.some((parse) => parse.name === name))) {
          connection.parse({ name, text, types: [] }, false)
          this.parsing.push({ name, text })
        }
        connection.bind({ statement: name, values: values.map(parameter) }, false)
        connection.describe({ type: 'P', name: '' }, false)
        connection.execute({ portal: '' }, false)
      }
      connection.sync()
    } finally {
      connection.stream.uncork()
    }
    if (this.parsing.some((parse) => parse.name !== '')) connection.on('parseComplete', this.parsed)
  }

  private readonly parsed = (): void => {
    const parse = this.parsing.shift()
    if (parse !== undefined && parse.name !== '') (this.connection as Connection).parsedStatements[parse.name] = parse.text
  }

  private done (): void {
    this.connection?.off('parseComplete', this.parsed)
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
    this.results.push({ rows: this.rows, rowCount: Number.isInteger(count) ? count : 0 })
    this.fields = []
    this.rows = []
  }

  handleEmptyQuery (): void {
    this.results.push({ rows: [], rowCount: 0 })
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

  handleCopyInResponse (connection: pg.Connection): void {
    (connection as unknown as { sendCopyFail: (message: string) => void }).sendCopyFail('no COPY data in a batch')
  }

  handleCopyData (): void {}
}

/**
 * Runs `statements` on `db` in one round trip, as one implicit transaction unless they are inside BEGIN … COMMIT, and
 * resolves with each one's rows; rejects with the first error, after which PostgreSQL ran none of the rest.
 */
export async function runBatch (db: pg.ClientBase, statements: readonly Statement[]): Promise<Array<StatementResult<pg.QueryResultRow>>> {
  return await new Promise((resolve, reject) => {
    db.query(new StatementBatch(statements, (error, results) => { if (error === undefined) resolve(results); else reject(error) }))
  })
}
