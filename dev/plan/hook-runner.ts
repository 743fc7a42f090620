import type { FastifyInstance } from 'fastify'
import type { Controller, HookName } from '../../hooks/framework/controller.js'
import { build } from '../../hooks/runtime/build.js'
import { loadConfig, type Config } from '../../hooks/runtime/config.js'
import type { Json } from './kube-api.js'
import type { RowEffect } from './postgres-writer.js'

/**
 * This checkout's hooks, run in this process on the requests the plan builds, through the app the server builds
 * (hooks/runtime/build.ts) with the hook server's configuration: the answer the server would give, or the refusal (the
 * status code and message Metacontroller would show in a SyncError event), or the failure (a 500, with the error the
 * server logs). A controller that writes outside Kubernetes runs as its stand-in, which forecasts what it would write.
 */

export type HookOutcome =
  | { kind: 'answer', body: Json, rows: RowEffect[] }
  | { kind: 'refused', statusCode: number, message: string, rows: RowEffect[] }
  | { kind: 'failed', message: string, rows: RowEffect[] }

export type HookRunner = (controller: Controller, hook: HookName, request: Json) => Promise<HookOutcome>

/** A controller as the plan runs it, in place of the registry's: what it would write is forecast, not written. */
export interface StandIn {
  controller: Controller
  /** What the last call would have written, taken: the next call starts afresh. */
  takeEffects: () => RowEffect[]
}

export interface RunnerOptions {
  /** The time a hook stamps on a condition whose status changes. */
  now: string
  /** The hook server's configuration (HOOKS_BODY_LIMIT, the controllers' own settings); the defaults without one. */
  config?: Config | undefined
  /** Stand-ins, by controller name. A controller that needs I/O and has none is not run. */
  standIns?: ReadonlyMap<string, StandIn> | undefined
}

/** An app of one controller, and the errors it logged, with their stacks. */
interface RunningApp { app: FastifyInstance, errors: string[] }

export function hookRunner ({ now, config = loadConfig({}), standIns = new Map() }: RunnerOptions): HookRunner {
  const apps = new Map<Controller, Promise<RunningApp>>()
  // In process: no port, so no TLS or bearer token, and only the errors are logged, to be read back.
  const inProcess: Config = { ...config, tls: undefined, bearerTokens: undefined, logLevel: 'error' }
  const appOf = async (controller: Controller): Promise<RunningApp> => {
    let running = apps.get(controller)
    if (running === undefined) {
      const errors: string[] = []
      const logStream = { write: (line: string) => { errors.push(String((JSON.parse(line) as { err?: { stack?: string } }).err?.stack ?? line)) } }
      running = build({ config: inProcess, controllers: [controller], clock: () => new Date(now), logStream }).then(({ app }) => ({ app, errors }))
      apps.set(controller, running)
    }
    return await running
  }
  return async (controller, hook, request) => {
    const standIn = standIns.get(controller.name)
    const served = standIn?.controller ?? controller
    if (served.needs.length > 0) {
      return { kind: 'failed', message: `the plan runs ${controller.name} only with a forecast of what it writes, which needs PostgreSQL: give the plan the hook server's database settings (DATABASE_URL, or PSQL_* or PG*)`, rows: [] }
    }
    if (hook === 'finalize' && served.hooks.finalize === undefined) {
      return { kind: 'refused', statusCode: 404, message: `this checkout has no ${hook} hook for ${controller.name}, which the cluster's ${controller.type === 'composite' ? 'CompositeController' : 'DecoratorController'} calls`, rows: [] }
    }
    const { app, errors } = await appOf(served)
    errors.length = 0
    const response = await app.inject({ method: 'POST', url: `/${controller.name}/${hook}`, payload: JSON.stringify(request), headers: { 'content-type': 'application/json' } })
    const rows = standIn?.takeEffects() ?? []
    const body = response.json<Json>()
    if (response.statusCode === 200) return { kind: 'answer', body, rows }
    if (response.statusCode >= 500) return { kind: 'failed', message: `the hook failed (the server answers ${response.statusCode}): ${errors.join('\n') || String(body.message)}`, rows }
    return { kind: 'refused', statusCode: response.statusCode, message: String(body.message), rows }
  }
}
