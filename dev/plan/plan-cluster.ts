import pg from 'pg'
import type { Controller } from '../../hooks/framework/controller.js'
import type { DatabaseConfig } from '../../hooks/database/pool.js'
import { kubernetesTime } from '../../hooks/framework/wire/conditions.js'
import { postgresWriter } from '../../hooks/postgres-writer/index.js'
import { postgresWriterSettings } from '../../hooks/postgres-writer/settings.js'
import type { Config } from '../../hooks/runtime/config.js'
import { planController, total, type ControllerPlan, type ControllerRead, type ControllerTotals } from './controller-plan.js'
import { ChildSpool } from './child-spool.js'
import { controllerKind, readControllerObject } from './controller-objects.js'
import { hookRunner } from './hook-runner.js'
import type { Json, KubeApi } from './kube-api.js'
import type { ParentPlan } from './parent-plan.js'
import { emptySnapshot, forecastingWriter, readRowSnapshot, RowForecast } from './postgres-writer.js'

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

/** The namespace the plan lists a resource in: the scope's, for a namespaced resource; all otherwise. */
function namespaceOf (namespaced: boolean, scope: Scope): string | undefined {
  return namespaced ? scope.namespace : undefined
}

/**
 * What a controller's rules select, read as Metacontroller's informers read it: the objects of its child kinds into a
 * spool (a file), and its parents a page at a time as the plan asks for them. The caller closes the spool.
 */
export async function readController (api: KubeApi, controller: Controller, scope: Scope, say: (message: string) => void = () => {}): Promise<ControllerRead> {
  const model = await readControllerObject(api, controller)
  const children = new ChildSpool()
  try {
    for (const rule of model?.children ?? []) {
      let read = 0
      for await (const page of api.pages(rule.apiVersion, rule.resource, { namespace: namespaceOf(rule.namespaced, scope) })) {
        for (const object of page) children.add(object)
        say(`reading ${rule.resource}: ${read += page.length}`)
      }
    }
  } catch (error) {
    children.close()
    throw error
  }
  async function * pages (): AsyncGenerator<Json[]> {
    for (const rule of model?.parents ?? []) {
      let read = 0
      for await (const parents of api.pages(rule.apiVersion, rule.resource, { namespace: namespaceOf(rule.namespaced, scope), labelSelector: scope.selector })) {
        say(`reading ${rule.resource}: ${read += parents.length}`)
        yield parents
      }
    }
  }
  return { controller, model, pages: pages(), children }
}

export function exitCode (plans: ReadonlyArray<Pick<ControllerPlan, 'summary'>>, errors: readonly string[]): ExitCode {
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

/** Where the plan goes as it is made: each parent's plan, each controller's totals once its parents are done, and the end. */
export interface PlanReport {
  parent: (controller: ControllerName, plan: ParentPlan) => Promise<void>
  controller: (totals: ControllerTotals) => Promise<void>
  end: (controllers: readonly ControllerTotals[], errors: readonly string[], exitCode: ExitCode) => Promise<void>
}

/** A controller as the report names it. */
export type ControllerName = Pick<ControllerTotals, 'controller' | 'kind'>

/** What the report says before any parent: where, when and what the plan reads. */
export type PlanHeading = Pick<ClusterPlan, 'planned' | 'server' | 'context' | 'scope'>

export function planHeading (api: KubeApi, scope: Scope, now: Date): PlanHeading {
  return { planned: kubernetesTime(now), server: api.server.server, context: api.server.context, scope }
}

/**
 * Plans each controller in turn, a page of parents at a time, handing each parent's plan to `report` as it is made;
 * what it keeps is each controller's totals and the errors. PostgresWriter's rows are read for each page of its
 * parents, before the page is planned.
 */
export async function planCluster (options: PlanOptions, report: PlanReport): Promise<ExitCode> {
  const { api, scope } = options
  const { database } = options.config
  const settings = postgresWriterSettings.read(options.config.settings)
  const now = kubernetesTime(options.now)
  const errors: string[] = []
  const say = options.progress ?? (() => {})
  const totals: ControllerTotals[] = []
  const rows = new RowForecast(emptySnapshot(settings.schema), settings)
  let pool: pg.Pool | undefined
  const run = hookRunner({ now, config: options.config, standIns: new Map([[postgresWriter.name, forecastingWriter(rows)]]) })

  /** Before a page of a controller's parents: why it cannot be planned, or undefined once what it needs is read. */
  async function prepare (controller: Controller, parents: readonly Json[]): Promise<string | undefined> {
    const needs: readonly string[] = controller.needs
    if (needs.length === 0) return undefined
    if (controller !== postgresWriter) return `${controller.name} needs ${needs.join(' and ')}, and the plan has no read-only forecast of what it writes: not planned`
    if (database.connection === undefined) {
      errors.push(`${controller.name}: PostgresWriter's plan reads its rows: give the plan the hook server's database settings (DATABASE_URL, or PSQL_* or PG*, and PG_SCHEMA, PG_TABLE_ALLOWLIST, PG_AUTO_CREATE_TABLES as the server has them)`)
      return 'not planned: no database settings'
    }
    say(`reading ${parents.length} PostgresWriter rows from PostgreSQL (${database.connection.description})`)
    try {
      pool ??= readOnlyPool(database)
      const client = await pool.connect().catch((error: Error) => {
        throw new Error(`cannot connect to PostgreSQL (${database.connection?.description ?? ''}): ${database.connection?.conceal(error.message) ?? error.message}`)
      })
      try {
        rows.snapshot = await readRowSnapshot(client, settings.schema, parents, rows.snapshot)
      } finally {
        client.release()
      }
    } catch (error) {
      errors.push(`postgres-writer: ${(error as Error).message}`)
      return 'not planned: PostgreSQL could not be read'
    }
    return undefined
  }

  try {
    for (const controller of options.controllers) {
      say(`reading ${controller.name}`)
      let read: ControllerRead
      try {
        read = await readController(api, controller, scope, say)
      } catch (error) {
        errors.push(`${controller.name}: ${(error as Error).message}`)
        continue
      }
      const planned = await planController(read, {
        now,
        run,
        parent: async (plan) => { await report.parent({ controller: controller.name, kind: controllerKind(controller) }, plan) },
        beforePage: async (parents) => await prepare(controller, parents),
        progress: (done) => { if (done % 50 === 0) say(`planning ${controller.name}: ${done} parents`) },
        failed: (error) => { errors.push(`${controller.name}: ${error.message}`) }
      }).finally(() => { read.children.close() })
      totals.push(planned)
      await report.controller(planned)
    }
  } finally {
    await pool?.end()
  }
  const code = exitCode(totals, errors)
  await report.end(totals, errors, code)
  return code
}
