import { configure, hookContext, ioFor, servedHooks, type Controller, type HookContext, type HookName, type Io } from '../../hooks/framework/controller.js'
import { HookError } from '../../hooks/framework/errors.js'
import { ConfigurationSchema } from '../../hooks/runtime/config-schema.js'
import { loadConfig } from '../../hooks/runtime/config.js'
import { postgresWriter, type PostgresWriterIo } from '../../hooks/postgres-writer/index.js'
import type { Json } from './kube-api.js'
import type { RowEffect, RowForecast } from './postgres-writer.js'

/**
 * This checkout's hooks, run in this process on the requests the plan builds: the answer the server would give, or
 * the refusal (the status code and message Metacontroller would show in a SyncError event), or the failure (a 500).
 * The request and the answer go through JSON, as on the wire. Each controller's I/O is built once, as the server
 * builds it; PostgresWriter's rows are a forecast instead of PostgreSQL.
 */

export type HookOutcome =
  | { kind: 'answer', body: Json, rows: RowEffect[] }
  | { kind: 'refused', statusCode: number, message: string, rows: RowEffect[] }
  | { kind: 'failed', message: string, rows: RowEffect[] }

export type HookRunner = (controller: Controller, hook: HookName, request: Json) => Promise<HookOutcome>

export interface RunnerOptions {
  /** The time a hook stamps on a condition whose status changes. */
  now: string
  io: Partial<Io>
  /** The hook server's settings, its controllers' own included; the defaults without them. */
  settings?: Readonly<Record<string, unknown>>
  /** Where PostgresWriter's writes go instead; without one, its hooks are not run. */
  rows?: RowForecast | undefined
}

const wire = (value: unknown): Json => JSON.parse(JSON.stringify(value)) as Json

type Served = Partial<Record<HookName, (request: any, context: HookContext<any, any>) => unknown>>

/** The answer limit of a server with the default HOOKS_BODY_LIMIT. */
const BODY_LIMIT = ConfigurationSchema.properties.HOOKS_BODY_LIMIT.default as number

/** A controller's hooks as the server runs them, whichever its type. */
function served (controller: Controller): Served {
  return controller.type === 'composite' ? servedHooks(controller, BODY_LIMIT) : servedHooks(controller, BODY_LIMIT)
}

export function hookRunner ({ now, io, settings = loadConfig({}).settings, rows }: RunnerOptions): HookRunner {
  const connected = new Map<Controller, object>()
  const connect = (controller: Controller): object => {
    let built = connected.get(controller)
    if (built === undefined) connected.set(controller, built = ioFor(configure(controller, settings), io))
    return built
  }
  return async (controller, hook, request) => {
    const hooks = served(controller)
    let effects: RowEffect[] = []
    let forecast: Pick<PostgresWriterIo, 'rows'> | undefined
    if (controller === postgresWriter) {
      if (rows === undefined) return { kind: 'failed', message: 'PostgresWriter needs PostgreSQL to be planned: give the plan the hook server\'s database settings (DATABASE_URL, or PSQL_* or PG*)', rows: effects }
      const call = rows.call()
      forecast = { rows: call }
      effects = call.effects
    }
    const run = hooks[hook]
    if (run === undefined) {
      return { kind: 'refused', statusCode: 404, message: `this checkout has no ${hook} hook for ${controller.name}, which the cluster's ${controller.type === 'composite' ? 'CompositeController' : 'DecoratorController'} calls`, rows: effects }
    }
    const sent = wire(request)
    try {
      const object = controller.type === 'composite' ? sent.parent : sent.object
      const body = await run(sent, hookContext(controller, object, now, { ...connect(controller), ...forecast }))
      return { kind: 'answer', body: wire(body), rows: effects }
    } catch (error) {
      if (error instanceof HookError) return { kind: 'refused', statusCode: error.statusCode, message: error.message, rows: effects }
      return { kind: 'failed', message: `the hook failed (the server answers 500): ${(error as Error).stack ?? String(error)}`, rows: effects }
    }
  }
}
