import type { DecoratorController } from '../framework/index.js'
import type { PostgresIo } from '../database/pool.js'
import { postgresWriterResource } from './resource.js'
import { RowStore } from './rows.js'
import { driftOf, finalizeResponse, planFinalize, planSync, syncResponse } from './sync.js'

/** One store per pool, so that what it learnt of the tables lasts across calls. */
const stores = new WeakMap<PostgresIo, RowStore>()
function storeFor (postgres: PostgresIo): RowStore {
  let store = stores.get(postgres)
  if (store === undefined) stores.set(postgres, store = new RowStore(postgres))
  return store
}

/** PostgresWriter: one PostgreSQL row per custom resource, deleted when the resource is. */
export const postgresWriter: DecoratorController<typeof postgresWriterResource, 'postgres'> = {
  type: 'decorator',
  name: 'postgres-writer',
  resource: postgresWriterResource,
  needs: ['postgres'],
  resyncPeriodSeconds: 300,
  hooks: {
    sync: async (_request, { parent, now, io: { postgres }, driftRepaired, arrivedAt }) => {
      const plan = planSync(parent, postgres.policy)
      const outcome = plan.kind === 'refuse' ? plan : { kind: plan.kind, plan, result: await storeFor(postgres).write(plan, arrivedAt) }
      const drift = driftOf(outcome)
      if (drift !== undefined) driftRepaired(drift)
      return syncResponse(parent, outcome, postgres.policy, now)
    },
    finalize: async (_request, { parent, now, io: { postgres }, arrivedAt }) => {
      const plan = planFinalize(parent)
      return finalizeResponse(parent, plan, await storeFor(postgres).delete(plan, arrivedAt), postgres.policy, now)
    }
  }
}
