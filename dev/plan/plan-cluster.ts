import pg from 'pg'
import type { Controller } from '../../hooks/framework/controller.js'
import type { DatabaseConfig } from '../../hooks/database/pool.js'
import { kubernetesTime } from '../../hooks/framework/wire/conditions.js'
import { postgresWriter } from '../../hooks/postgres-writer/index.js'
import { postgresWriterSettings } from '../../hooks/postgres-writer/settings.js'
import type { Config } from '../../hooks/runtime/config.js'
import { planController, skippedPlan, total, type ControllerPlan, type ControllerRead } from './controller-plan.js'
import { readControllerObject } from './controller-objects.js'
import { hookRunner } from './hook-runner.js'
import type { KubeApi } from './kube-api.js'
import { forecastingWriter, readRowSnapshot, RowForecast } from './postgres-writer.js'

/**
 * The plan of every controller of this checkout's registry against a cluster: what it reads (get and list only),
 * the PostgreSQL snapshot PostgresWriter's plan needs (read only), each controller planned, and the exit code.
 */

export interface Scope {
  /** Only parents (and children) in this namespace. */
  namespace?: string | undefined
  /** Only parents with these labels (a label selector as kubectl takes it). */
  selector?: string | undefined
}

export interface ClusterPlan {
  /** The time the hooks stamp on what changes: the plan's own. */
  planned: string
  server: string
  context: string | undefined
  scope: Scope
  controllers: ControllerPlan[]
  /** What could not be read or planned. */
  errors: string[]
  exitCode: ExitCode
}

/**
 * As `kubectl diff`: 0 nothing would change, 1 something would; above 1 an error: 2 the plan could not be made (or
 * not whole), 3 it was made, and the new code refuses, fails on or loops on some parents.
 */
export type ExitCode = 0 | 1 | 2 | 3

export interface PlanOptions {
  api: KubeApi
  controllers: readonly Controller[]
  scope: Scope
  /** The hook server's configuration: its database and PostgresWriter's settings. */
  config: Config
  now: Date
  /** A line of what the plan is doing, for a terminal. */
  progress?: (message: string) => void
}

/** The objects a controller's rules select, listed once per rule (not per parent). */
export async function readController (api: KubeApi, controller: Controller, scope: Scope, say: (message: string) => void = () => {}): Promise<ControllerRead> {
  const model = await readControllerObject(api, controller)
  if (model === undefined) return { controller, model, parents: [], children: [] }
  const inScope = (namespaced: boolean): string | undefined => namespaced ? scope.namespace : undefined
  const [parents, children] = await Promise.all([
    Promise.all(model.parents.map(async (rule) => await api.list(rule.apiVersion, rule.resource, { namespace: inScope(rule.namespaced), labelSelector: scope.selector, progress: (read) => { say(`reading ${rule.resource}: ${read}`) } }))),
    Promise.all(model.children.map(async (rule) => await api.list(rule.apiVersion, rule.resource, { namespace: inScope(rule.namespaced), progress: (read) => { say(`reading ${rule.resource}: ${read}`) } })))
  ])
  return { controller, model, parents: parents.flat(), children: children.flat() }
}

export function exitCode (plans: readonly ControllerPlan[], errors: readonly string[]): ExitCode {
  if (errors.length > 0) return 2
  const sum = total(plans)
  if (sum.refused > 0) return 3
  return sum.change + sum.create + sum.rows > 0 ? 1 : 0
}

/** A pool whose every transaction is read-only, whatever runs on it. */
export function readOnlyPool (database: DatabaseConfig): pg.Pool {
  const config = database.connection?.clientConfig ?? {}
  return new pg.Pool({
    ...config,
    max: 1,
    options: `${config.options ?? ''} -c default_transaction_read_only=on`.trim(),
    application_name: 'metacontroller-hooks-plan',
    connectionTimeoutMillis: database.connectTimeoutMs,
    statement_timeout: database.statementTimeoutMs
  })
}

export async function planCluster (options: PlanOptions): Promise<ClusterPlan> {
  const { api, scope } = options
  const { database } = options.config
  const settings = postgresWriterSettings.read(options.config.settings)
  const now = kubernetesTime(options.now)
  const errors: string[] = []
  const say = options.progress ?? (() => {})
  say('reading the controllers, their parents and children')
  const reads = (await Promise.all(options.controllers.map(async (controller) => await readController(api, controller, scope, say).catch((error: Error) => {
    errors.push(`${controller.name}: ${error.message}`)
    return undefined
  })))).filter((read): read is ControllerRead => read !== undefined)

  let rows: RowForecast | undefined
  let pool: pg.Pool | undefined
  const skipped = new Map<Controller, string>()
  try {
    for (const read of reads) {
      const needs: readonly string[] = read.controller.needs
      if (needs.length === 0 || read.model === undefined || read.parents.length === 0) continue
      if (read.controller !== postgresWriter) {
        skipped.set(read.controller, `${read.controller.name} needs ${needs.join(' and ')}, and the plan has no read-only forecast of what it writes: not planned`)
        continue
      }
      if (database.connection === undefined) {
        errors.push(`${read.controller.name}: PostgresWriter's plan reads its rows: give the plan the hook server's database settings (DATABASE_URL, or PSQL_* or PG*, and PG_SCHEMA, PG_TABLE_ALLOWLIST, PG_AUTO_CREATE_TABLES as the server has them)`)
        skipped.set(read.controller, 'not planned: no database settings')
        continue
      }
      say(`reading ${read.parents.length} PostgresWriter rows from PostgreSQL (${database.connection.description})`)
      pool = readOnlyPool(database)
      const client = await pool.connect().catch((error: Error) => {
        throw new Error(`cannot connect to PostgreSQL (${database.connection?.description ?? ''}): ${database.connection?.conceal(error.message) ?? error.message}`)
      })
      try {
        rows = new RowForecast(await readRowSnapshot(client, settings.schema, read.parents), settings)
      } finally {
        client.release()
      }
    }
  } catch (error) {
    errors.push(`postgres-writer: ${(error as Error).message}`)
    for (const read of reads) if (read.controller === postgresWriter) skipped.set(read.controller, 'not planned: PostgreSQL could not be read')
  }

  const run = hookRunner({ now, config: options.config, standIns: rows === undefined ? undefined : new Map([[postgresWriter.name, forecastingWriter(rows)]]) })
  const controllers: ControllerPlan[] = []
  try {
    for (const read of reads) {
      const why = skipped.get(read.controller)
      if (why !== undefined) {
        controllers.push(skippedPlan(read.controller, why))
        continue
      }
      controllers.push(await planController(read, {
        now,
        run,
        progress: (done, count) => { if (done % 50 === 0 || done === count) say(`planning ${read.controller.name}: ${done}/${count} parents`) }
      }))
    }
  } finally {
    await pool?.end()
  }
  return { planned: now, server: api.server.server, context: api.server.context, scope, controllers, errors, exitCode: exitCode(controllers, errors) }
}
