import type { DecoratorController } from '../controller.js'
import { postgresWriterResource } from './resource.js'
import { RowStore } from './rows.js'
import { finalizeResponse, planSync, rowId, syncResponse } from './sync.js'

/** PostgresWriter: one PostgreSQL row per custom resource, deleted when the resource is. */
export const postgresWriter: DecoratorController<typeof postgresWriterResource, 'postgres'> = {
  type: 'decorator',
  name: 'postgres-writer',
  resource: postgresWriterResource,
  needs: ['postgres'],
  resyncPeriodSeconds: 300,
  hooks: {
    sync: async (_request, { parent, now, io: { postgres } }) => {
      const plan = planSync(parent, postgres.policy)
      const outcome = plan.kind === 'refuse' ? plan : { kind: plan.kind, plan, result: await new RowStore(postgres).write(plan.row, plan.table, plan.placed) }
      return syncResponse(parent, outcome, postgres.policy, now)
    },
    finalize: async (_request, { parent, now, io: { postgres } }) => finalizeResponse(parent, await new RowStore(postgres).delete(rowId(parent)), postgres.policy, now)
  }
}
