import type pg from 'pg'
import { markBroken, mustDiscard, preparedStatementFailed, withinDeadline, type Postgres } from '../database/index.js'
import { classifyFailure } from './failures.js'
import { RowWrites } from './rows.js'
import { PostgresSession, type Texts } from './session.js'
import type { PostgresWriterSettings } from './settings.js'
import type { Failed, FinalizePlan, FinalizeResult, SyncPlan, WriteResult } from './sync.js'
import { TableReadiness } from './table-readiness.js'

/**
 * The rows in PostgreSQL: each hook call's row writes (rows.ts) on one connection, within PG_HOOK_DEADLINE
 * (database/deadline.ts), every failure a result with a reason (failures.ts). One store per server, built by
 * PostgresWriter's `connect`: it remembers across calls the tables found fit, and the statements' texts.
 */
export class RowStore {
  private readonly writes: RowWrites
  private readonly texts: Texts = new Map()

  constructor (private readonly postgres: Postgres, private readonly settings: PostgresWriterSettings) {
    this.writes = new RowWrites(settings.schema, new TableReadiness(settings))
  }

  async write (plan: Extract<SyncPlan, { kind: 'write' }>, arrivedAt: number): Promise<WriteResult> {
    return await this.run(arrivedAt, async (session) => await this.writes.write(session, plan))
  }

  async delete (plan: FinalizePlan, arrivedAt: number): Promise<FinalizeResult> {
    return await this.run(arrivedAt, async (session) => await this.writes.delete(session, plan))
  }

  /**
   * Runs a hook call's work within its deadline, counted from its arrival; every failure becomes a result with a
   * reason. When a prepared statement fails (a pooler that lost it, a table whose new shape its plan cannot take), the
   * work runs once more with unnamed statements, and the connection is discarded at the end of the call. Each batch of
   * statements is a transaction of its own, so a failed one leaves none open.
   */
  private async run<Result extends WriteResult | FinalizeResult> (arrivedAt: number, work: (session: PostgresSession) => Promise<Result | Failed>): Promise<Result | Failed> {
    try {
      return await withinDeadline(this.postgres, async (db: pg.PoolClient) => {
        const session = new PostgresSession(db, this.settings.schema, this.postgres.preparedStatements, this.texts)
        try {
          return await work(session)
        } catch (error) {
          if (!preparedStatementFailed(error) || mustDiscard(db)) throw error
          markBroken(db)
          return await work(session)
        }
      }, arrivedAt)
    } catch (error) {
      return classifyFailure(error, this.postgres)
    }
  }
}
