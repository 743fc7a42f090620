import { refused, tableMissing } from './failures.js'
import { TABLE_NAME_PATTERN } from './resource.js'
import { query, type Session } from './session.js'
import type { PostgresWriterSettings } from './settings.js'
import { isSqlIdentifier } from './sql-identifier.js'
import { earlierRowTables, hookTablesDdl, inspectTable, lockHookTables, migrationDdl, qualified, type InspectReport } from './statements.js'
import type { Failed } from './sync.js'
import { PLACEMENTS_TABLE, tableVerdict, TOMBSTONES_TABLE, type HookTables, type Relation } from './tables.js'

/**
 * Making the tables fit before a row is written: the hook's own tables current (created, or an earlier version's
 * migrated, when PG_AUTO_CREATE_TABLES allows it), and the row's table an ordinary table that can hold it (created
 * when missing and allowed). What was found fit is remembered across calls, by the store that owns this.
 */

/** What the catalog says of a table and of the hook's own tables (statements.ts, inspectTable). */
interface Inspected {
  hookTables: HookTables
  /** The columns of the hook's tables that this version reads and that they lack, as `table.column`. */
  hookColumnsMissing: string[]
  relation: Relation | undefined
}

/**
 * Whether the hook's own tables are current: `ready`; `none` when they are missing and PG_AUTO_CREATE_TABLES=false;
 * or why they cannot be made so.
 */
export type HookTablesReadiness = 'ready' | 'none' | Failed

/**
 * How long a table found fit is taken to stay so. Every write checks that the table's name still means the table
 * found fit (its OID), which catches a table dropped and created again as anything else; what can change under the
 * same OID (ATTACH PARTITION, INHERIT, a column's type) shows as a failed write or at the next look, at most this late.
 */
const FIT_FOR_MS = 60_000

export class TableReadiness {
  /** Tables found fit, by name: the OID they had then, and when. */
  private readonly fit = new Map<string, { oid: string, at: number }>()
  /** The hook's own tables were found current (tables.ts): they are looked at again after any write that fails. */
  private hookTablesCurrent = false

  constructor (private readonly settings: PostgresWriterSettings) {}

  private get schema (): string {
    return this.settings.schema
  }

  /**
   * The OID of `table` once it is known to be an ordinary table that can hold the row, and the hook's own tables are
   * current; otherwise why not. Looked up in the catalog the first time, then remembered: every write checks, in its
   * own statement, that it still holds.
   */
  async fitTable (session: Session, table: string): Promise<string | Failed> {
    const known = this.fit.get(table)
    if (known !== undefined && this.hookTablesCurrent && performance.now() - known.at < FIT_FOR_MS) return known.oid
    let inspected = await this.inspect(session, table)
    if (inspected.hookTables !== 'current') {
      const ready = await this.prepareHookTables(session, inspected)
      if (ready !== 'ready') return ready === 'none' ? refused('TableMissing', hookTablesMissing(this.schema)) : ready
    }
    if (inspected.relation === undefined && this.settings.autoCreateTables) {
      await session.change({ action: 'createTable', table })
      inspected = await this.inspect(session, table)
    }
    if (inspected.relation === undefined) return tableMissing(`relation "${this.schema}.${table}" does not exist`)
    const verdict = tableVerdict(this.schema, table, inspected.relation)
    if (verdict.kind === 'unfit') return refused(verdict.reason, verdict.message)
    this.fit.set(table, { oid: verdict.oid, at: performance.now() })
    this.hookTablesCurrent = true
    return verdict.oid
  }

  /** Whether the hook's own tables are current, made so when PG_AUTO_CREATE_TABLES allows it. */
  async hookTablesReady (session: Session): Promise<HookTablesReadiness> {
    if (this.hookTablesCurrent) return 'ready'
    const inspected = await this.inspect(session, TOMBSTONES_TABLE)
    const ready = inspected.hookTables === 'current' ? 'ready' : await this.prepareHookTables(session, inspected)
    if (ready === 'ready') this.hookTablesCurrent = true
    return ready
  }

  /** A write found `table` (or, without one, the hook's own tables) changed since it was looked at: look again. */
  changed (table?: string): void {
    if (table !== undefined) this.fit.delete(table)
    this.hookTablesCurrent = false
  }

  /**
   * Creates the hook's missing tables, or migrates an earlier version's, when PG_AUTO_CREATE_TABLES allows it. Tables
   * another version laid out otherwise are left as they are: this version writes nothing on them.
   */
  private async prepareHookTables (session: Session, inspected: Inspected): Promise<HookTablesReadiness> {
    // One catalog read can race another call's creation of these tables and see a table without its columns: the
    // layout is judged other only when a second read, after that creation committed, sees it too.
    const { hookTables: state, hookColumnsMissing } = inspected.hookTables === 'other' ? await this.inspect(session, TOMBSTONES_TABLE) : inspected
    if (state === 'current') return 'ready'
    if (state === 'other') return refused('TableIncompatible', this.otherLayout(hookColumnsMissing))
    if (!this.settings.autoCreateTables) return state === 'missing' ? 'none' : refused('TableMissing', await this.migrationNeeded(session))
    if (state === 'missing') await session.change({ action: 'createHookTables' })
    else await this.migrate(session)
    return 'ready'
  }

  /**
   * Migrates the tables of a version that recorded no placements (statements.ts, migrationDdl), once: replicas that
   * start together take turns on a transaction lock, and each looks again once it holds it.
   */
  private async migrate (session: Session): Promise<void> {
    await session.transaction(async () => {
      await session.batch([query(lockHookTables, undefined, { schema: this.schema })])
      if ((await this.inspect(session, TOMBSTONES_TABLE)).hookTables === 'earlier') {
        await session.change({ action: 'migrate', earlierTables: await this.earlierRowTables(session) })
      }
    })
  }

  private async earlierRowTables (session: Session): Promise<string[]> {
    const [rows = []] = await session.batch([query(earlierRowTables, undefined, { schema: this.schema, tablePattern: TABLE_NAME_PATTERN })])
    return (rows as Array<{ relname: string }>).map((row) => row.relname).filter(isSqlIdentifier)
  }

  private otherLayout (missing: readonly string[]): string {
    return `the hook's own tables in schema ${this.schema} are not laid out as this version of the hook reads them (${missing.join(', ')} missing): another version changed them, most likely a later one that this server was rolled back from; run that version again, or first the way back to this version's tables that its documentation gives (docs/postgres-writer.md); nothing was written`
  }

  private async migrationNeeded (session: Session): Promise<string> {
    const statements = migrationDdl(this.schema, await this.earlierRowTables(session))
    return `the hook's tables in schema ${this.schema} are those of an earlier version, which did not record where it wrote each row: migrate them in one transaction (BEGIN; ${ddlText(statements)} COMMIT;) and grant the hook's user SELECT, INSERT, UPDATE and DELETE on ${qualified(this.schema, PLACEMENTS_TABLE)}, or set PG_AUTO_CREATE_TABLES=true; nothing was written`
  }

  private async inspect (session: Session, table: string): Promise<Inspected> {
    const [[row] = []] = await session.batch([query(inspectTable, undefined, { schema: this.schema, table })]) as InspectReport[][]
    return { hookTables: row?.hookTables ?? 'missing', hookColumnsMissing: row?.hookColumnsMissing ?? [], relation: row === undefined || row.oid === null ? undefined : row as Relation }
  }
}

/** Why a write found the hook's own tables missing, with PG_AUTO_CREATE_TABLES off, and how to create them. */
export function hookTablesMissing (schema: string): string {
  return `the hook's own tables are missing from schema ${schema}: they record where each row was written, and the uid of every finalized PostgresWriter, so that no call that arrives after the finalize writes its row again; create them (${ddlText(hookTablesDdl(schema))}) and grant the hook's user SELECT, INSERT, UPDATE and DELETE on them, or set PG_AUTO_CREATE_TABLES=true; nothing was written`
}

/** DDL statements as one line of SQL, for a message. */
function ddlText (statements: readonly string[]): string {
  return statements.map((statement) => `${statement.replace(' IF NOT EXISTS', '')};`).join(' ')
}
