import type { DecoratorController } from '../controller.js'
import { finalizeResponse, planSync, rowId, syncResponse } from './plan.js'
import { postgresWriterResource } from './resource.js'
import { RowStore } from './rows.js'

/** PostgresWriter: one PostgreSQL row per custom resource, deleted when the resource is. */
export const postgresWriter: DecoratorController = {
  type: 'decorator',
  name: 'postgres-writer',
  resource: postgresWriterResource,
  hasFinalize: true,
  resyncPeriodSeconds: 300,
  hooks: ({ pool, policy, databaseDescription }) => {
    if (pool === undefined) throw new Error('postgres-writer needs a database pool')
    const rows = new RowStore(pool, policy, databaseDescription)
    return {
      sync: async (request, { now }) => {
        const plan = planSync(request, policy)
        const outcome = plan.kind === 'refuse' ? plan : { kind: plan.kind, plan, result: await rows.write(plan.row, plan.table, plan.placed) }
        return syncResponse(request, outcome, policy, now)
      },
      finalize: async (request, { now }) => finalizeResponse(request, await rows.delete(rowId(request)), policy, now)
    }
  }
}
