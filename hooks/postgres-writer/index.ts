import type { PostgresNeed } from '../database/index.js'
import type { DecoratorController } from '../framework/index.js'
import { postgresWriterResource } from './resource.js'
import { RowStore } from './row-store.js'
import { postgresWriterSettings, type PostgresWriterSettings } from './settings.js'
import { driftOf, finalizeResponse, planFinalize, planSync, syncResponse, type FinalizePlan, type FinalizeResult, type SyncPlan, type TableRules, type WriteResult } from './sync.js'

/** What PostgresWriter's hooks write rows through: RowStore (row-store.ts), built once per server by `connect`. */
export interface Rows {
  write: (plan: Extract<SyncPlan, { kind: 'write' }>, arrivedAt: number) => Promise<WriteResult>
  delete: (plan: FinalizePlan, arrivedAt: number) => Promise<FinalizeResult>
}

/** What PostgresWriter's hooks get as `io`: the rows, which remember across calls the tables found fit, and where rows may go. */
export interface PostgresWriterIo {
  rows: Rows
  tables: TableRules
}

/** PostgresWriter: one PostgreSQL row per custom resource, deleted when the resource is. */
export const postgresWriter: DecoratorController<typeof postgresWriterResource, PostgresNeed, PostgresWriterIo, PostgresWriterSettings> = {
  type: 'decorator',
  name: 'postgres-writer',
  resource: postgresWriterResource,
  needs: ['postgres'],
  settings: postgresWriterSettings,
  connect: ({ postgres }, settings) => ({ rows: new RowStore(postgres, settings), tables: settings }),
  resyncPeriodSeconds: 300,
  hooks: {
    sync: async (_request, { parent, now, io: { rows, tables }, driftRepaired, arrivedAt }) => {
      const plan = planSync(parent, tables)
      const outcome = plan.kind === 'refuse' ? plan : { kind: plan.kind, plan, result: await rows.write(plan, arrivedAt) }
      const drift = driftOf(outcome)
      if (drift !== undefined) driftRepaired(drift)
      return syncResponse(parent, outcome, tables, now)
    },
    finalize: async (_request, { parent, now, io: { rows, tables }, arrivedAt }) => {
      const plan = planFinalize(parent)
      return finalizeResponse(parent, plan, await rows.delete(plan, arrivedAt), tables, now)
    }
  }
}
