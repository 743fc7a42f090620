import type { PostgresPolicy } from '../config.js'
import { isSqlIdentifier } from '../config.js'
import { specParser } from '../spec.js'
import { observedConditions, readyCondition } from '../wire/conditions.js'
import type { DecoratorRequest, DecoratorResponse } from '../wire/schemas.js'
import { PostgresWriterSpecSchema, postgresWriterResource, type PostgresWriterStatus } from './resource.js'

/**
 * The pure core of PostgresWriter: what to write or delete for a request, and the answer for what happened.
 * The I/O between the two lives in rows.ts.
 */

export interface Row {
  id: string
  name: string
  age: number
  country: string
}

export type Refusal = { reason: 'InvalidTableName' | 'TableNotAllowed' | 'InvalidSpec', message: string }

export type SyncPlan =
  | { kind: 'refuse', refusal: Refusal }
  /**
   * `placed`: the last acknowledged sync put the row in this very table, so an upsert there is all it takes.
   * Otherwise (first write, table change, or an answer that never reached Metacontroller) the row may sit in any
   * table, and the write also removes it from every other one.
   */
  | { kind: 'write', row: Row, table: string, placed: boolean }

/** What the database did; a failure carries a reason a person can act on. */
export type WriteResult =
  | { kind: 'done' }
  | { kind: 'failed', reason: string, message: string, retryAfterSeconds: number }

const parseSpec = specParser(PostgresWriterSpecSchema, postgresWriterResource.kind)

export function rowId (request: DecoratorRequest): string {
  return `${request.object.metadata.namespace ?? 'default'}/${request.object.metadata.name ?? ''}`
}

function statusOf (request: DecoratorRequest): Partial<PostgresWriterStatus> {
  const status = request.object.status
  return typeof status === 'object' && status !== null ? status as Partial<PostgresWriterStatus> : {}
}

function tableRefusal (table: string, policy: PostgresPolicy): Refusal | undefined {
  if (!isSqlIdentifier(table)) {
    return { reason: 'InvalidTableName', message: `spec.table ${JSON.stringify(table)} is not a lowercase SQL identifier (^[a-z_][a-z0-9_]{0,62}$); nothing was written` }
  }
  if (policy.tableAllowlist !== undefined && !policy.tableAllowlist.has(table)) {
    return { reason: 'TableNotAllowed', message: `table ${JSON.stringify(table)} is not in PG_TABLE_ALLOWLIST (${[...policy.tableAllowlist].join(', ')}); nothing was written` }
  }
  return undefined
}

/** A table custom resources may write: a valid identifier, allowed by the policy. */
export function writableTable (table: string, policy: PostgresPolicy): boolean {
  return tableRefusal(table, policy) === undefined
}

function unstorableText (value: string): string | undefined {
  if (value.includes('\u0000')) return 'a NUL character'
  if (!value.isWellFormed()) return 'an unpaired UTF-16 surrogate'
  return undefined
}

export function planSync (request: DecoratorRequest, policy: PostgresPolicy): SyncPlan {
  const rawTable = (request.object.spec as { table?: unknown } | undefined)?.table
  if (typeof rawTable === 'string') {
    const refusal = tableRefusal(rawTable, policy)
    if (refusal !== undefined) return { kind: 'refuse', refusal }
  }
  const spec = parseSpec(request.object.spec)
  for (const field of ['name', 'country'] as const) {
    const problem = unstorableText(spec[field])
    if (problem !== undefined) {
      return { kind: 'refuse', refusal: { reason: 'InvalidSpec', message: `spec.${field} contains ${problem}, which a PostgreSQL text column cannot hold; nothing was written` } }
    }
  }
  return {
    kind: 'write',
    row: { id: rowId(request), name: spec.name, age: spec.age, country: spec.country },
    table: spec.table,
    placed: statusOf(request).table === spec.table
  }
}

function qualified (schema: string, table: string): string {
  return `${schema}.${table}`
}

/** How a sync ended: refused before any SQL, or what the database did with the planned write. */
export type SyncOutcome =
  | Extract<SyncPlan, { kind: 'refuse' }>
  | { kind: 'write', plan: Extract<SyncPlan, { kind: 'write' }>, result: WriteResult }

export function syncResponse (request: DecoratorRequest, outcome: SyncOutcome, policy: PostgresPolicy, now: string): DecoratorResponse {
  const observed = statusOf(request)
  const generation = request.object.metadata.generation
  const conditions = observedConditions(observed)
  let table = typeof observed.table === 'string' ? observed.table : undefined
  let ready
  let resyncAfterSeconds: number | undefined
  if (outcome.kind === 'refuse') {
    ready = readyCondition(false, outcome.refusal.reason, outcome.refusal.message, conditions, generation, now)
  } else if (outcome.result.kind === 'failed') {
    ready = readyCondition(false, outcome.result.reason, outcome.result.message, conditions, generation, now)
    resyncAfterSeconds = outcome.result.retryAfterSeconds
  } else {
    table = outcome.plan.table
    ready = readyCondition(true, 'RowWritten', `row ${JSON.stringify(outcome.plan.row.id)} in ${qualified(policy.schema, table)} matches the spec`, conditions, generation, now)
  }
  const status: PostgresWriterStatus = {
    ...(table === undefined ? {} : { table }),
    id: rowId(request),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: [ready]
  }
  return { status, attachments: [], ...(resyncAfterSeconds === undefined ? {} : { resyncAfterSeconds }) }
}

export function finalizeResponse (request: DecoratorRequest, result: WriteResult, policy: PostgresPolicy, now: string): DecoratorResponse {
  const observed = statusOf(request)
  const generation = request.object.metadata.generation
  const conditions = observedConditions(observed)
  const id = rowId(request)
  const done = result.kind === 'done'
  const ready = done
    ? readyCondition(false, 'RowDeleted', `row ${JSON.stringify(id)} deleted from every table of schema ${policy.schema}`, conditions, generation, now)
    : readyCondition(false, result.reason, `row ${JSON.stringify(id)} not deleted yet: ${result.message}`, conditions, generation, now)
  const status: PostgresWriterStatus = {
    ...(typeof observed.table === 'string' ? { table: observed.table } : {}),
    id,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: [ready]
  }
  return {
    status,
    attachments: [],
    finalized: done,
    ...(done ? {} : { resyncAfterSeconds: result.retryAfterSeconds })
  }
}
