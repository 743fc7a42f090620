import { isSqlIdentifier } from './sql-identifier.js'
import { HookError, parentStatus, unprocessableSpec, type DecoratorResponse, type Drift, type ParentMetadata, type ParentOf, type Readiness } from '../framework/index.js'
import { DELETION_POLICIES, postgresWriterResource, type DeletionPolicy, type PostgresWriterStatus } from './resource.js'

/**
 * The pure core of PostgresWriter: what to write or delete for a request, and the answer for what happened.
 * The I/O between the two lives in row-store.ts, which writes as rows.ts and table-readiness.ts decide.
 */

export interface Row {
  id: string
  name: string
  age: number
  country: string
}

/** What the core reads of the tables' configuration: where rows go (PG_SCHEMA), and which tables may hold them (PG_TABLE_ALLOWLIST). */
export interface TableRules {
  schema: string
  /** Undefined: any valid name. */
  tableAllowlist: ReadonlySet<string> | undefined
}

export type Refusal = { reason: 'InvalidTableName' | 'TableNotAllowed', message: string }

/** When to call again after PostgreSQL was unavailable or too slow. */
export const RETRY_UNAVAILABLE_SECONDS = 10

/** When to call again after the hook refused the spec or the table: someone has to change something first. */
export const RETRY_REFUSED_SECONDS = 60

export type SyncPlan =
  | { kind: 'refuse', refusal: Refusal }
  /**
   * `previousTable`: where the last acknowledged sync put the row. When it is this very table, an update there is all
   * it takes. Otherwise (first write, table change, or an answer that never reached Metacontroller) the write also
   * removes the row from every other table where the hook wrote it, which it expects to be `previousTable`.
   * `written`: the last acknowledged sync wrote this very spec into this table, so any write now repairs drift.
   */
  | { kind: 'write', row: Row, table: string, previousTable: string | undefined, uid: string, releaseToken: string | undefined, written: boolean }

/**
 * A write or finalize that did not happen, with a reason a person can act on. `releaseToken`: the write was refused
 * because the object was released (see FinalizeResult), and its answer carries the token back.
 */
export interface Failed { kind: 'failed', reason: string, message: string, retryAfterSeconds: number, releaseToken?: string }

/** What the database did with a write: the row was already so, or it was updated, or inserted. */
export type WriteResult = { kind: 'done', wrote: 'nothing' | 'updated' | 'inserted' } | Failed

/**
 * What the database did with a finalize. `releaseToken`: the object was not being deleted (it stopped matching the
 * DecoratorController's selector), so its row was released; a sync whose status carries the token back was sent after
 * the finalize, and may write again.
 */
export type FinalizeResult = { kind: 'done', releaseToken: string | undefined, tables: string[] } | Failed

/**
 * What a finalize does: delete the object's row from every table where the hook wrote it, or keep it (Orphan).
 * `deleting`: the object is being deleted; otherwise it stopped matching the DecoratorController's selector.
 */
export interface FinalizePlan { kind: 'finalize', id: string, uid: string, previousTable: string | undefined, deleting: boolean, policy: DeletionPolicy }

type PostgresWriter = ParentOf<typeof postgresWriterResource>
type DriftRepair = NonNullable<PostgresWriterStatus['lastDriftRepair']>

/**
 * The row's id, `<namespace>/<name>`, and the object's uid. The parent reader let through only a DNS-subdomain name
 * and a DNS-label namespace, neither of which holds a '/': so the id splits back into both, and two objects never
 * share one.
 */
export function rowOwner (parent: ParentMetadata): { id: string, uid: string } {
  if (parent.namespace === undefined) {
    throw new HookError(422, 'object.metadata.namespace is missing: a PostgresWriter is a namespaced object, and its row\'s id is <namespace>/<name>. Send the object as the API server holds it.')
  }
  if (parent.uid === undefined || parent.uid === '') {
    throw new HookError(422, 'object.metadata.uid is missing: the hook records the uid of every finalized PostgresWriter, so that no call that arrives late writes its row again. Send the object as the API server holds it.')
  }
  return { id: rowId(parent), uid: parent.uid }
}

export function rowId (parent: Pick<ParentMetadata, 'namespace' | 'name'>): string {
  return `${parent.namespace ?? ''}/${parent.name}`
}

function tableRefusal (table: string, policy: TableRules): Refusal | undefined {
  if (!isSqlIdentifier(table)) {
    return { reason: 'InvalidTableName', message: `spec.table ${JSON.stringify(table)} is not a lowercase SQL identifier (^[a-z_][a-z0-9_]{0,62}$); nothing was written` }
  }
  if (policy.tableAllowlist !== undefined && !policy.tableAllowlist.has(table)) {
    return { reason: 'TableNotAllowed', message: `table ${JSON.stringify(table)} is not in PG_TABLE_ALLOWLIST (${[...policy.tableAllowlist].join(', ')}); nothing was written` }
  }
  return undefined
}

function unstorableText (value: string): string | undefined {
  if (value.includes('\u0000')) return 'a NUL character'
  if (!value.isWellFormed()) return 'an unpaired UTF-16 surrogate'
  return undefined
}

export function planSync (parent: PostgresWriter, policy: TableRules): SyncPlan {
  const { id, uid } = rowOwner(parent)
  // A table SQL must never see is refused in the status before the rest of the spec is looked at.
  const raw = parent.object.spec
  const rawTable = typeof raw === 'object' && raw !== null && 'table' in raw ? raw.table : undefined
  if (typeof rawTable === 'string') {
    const refusal = tableRefusal(rawTable, policy)
    if (refusal !== undefined) return { kind: 'refuse', refusal }
  }
  const spec = parent.spec()
  const unstorable = (['name', 'country'] as const).flatMap((field) => {
    const problem = unstorableText(spec[field])
    return problem === undefined ? [] : [`spec.${field}: contains ${problem}, which a PostgreSQL text column cannot hold`]
  })
  if (unstorable.length > 0) throw unprocessableSpec(postgresWriterResource.kind, unstorable)
  return {
    kind: 'write',
    row: { id, name: spec.name, age: spec.age, country: spec.country },
    table: spec.table,
    previousTable: parent.status.table,
    uid,
    releaseToken: parent.status.releaseToken,
    written: parent.status.table === spec.table && parent.generation !== undefined &&
      parent.conditions.some((c) => c.type === 'Ready' && c.status === 'True' && c.reason === 'RowWritten' && c.observedGeneration === parent.generation)
  }
}

/**
 * The finalize of `parent`. It reads spec.deletionPolicy alone, as stored: the rest of the spec does not matter to a
 * finalize, and a spec the hook cannot interpret otherwise must not keep the object from going. A policy it cannot
 * read keeps the object, and its row, until someone sets one (InvalidSpec).
 */
export function planFinalize (parent: PostgresWriter): FinalizePlan {
  const { id, uid } = rowOwner(parent)
  const raw = parent.object.spec
  const policy: unknown = typeof raw === 'object' && raw !== null && 'deletionPolicy' in raw ? raw.deletionPolicy : DELETION_POLICIES[0]
  if (!isDeletionPolicy(policy)) {
    throw unprocessableSpec(postgresWriterResource.kind, [`spec.deletionPolicy: ${JSON.stringify(policy)} is neither ${DELETION_POLICIES.join(' nor ')}, so the row is left as it is`])
  }
  return { kind: 'finalize', id, uid, previousTable: parent.status.table, deleting: parent.deleting, policy }
}

function isDeletionPolicy (value: unknown): value is DeletionPolicy {
  return DELETION_POLICIES.some((policy) => policy === value)
}

function qualified (schema: string, table: string): string {
  return `${schema}.${table}`
}

/** How a sync ended: refused before any SQL, or what the database did with the planned write. */
export type SyncOutcome =
  | Extract<SyncPlan, { kind: 'refuse' }>
  | { kind: 'write', plan: Extract<SyncPlan, { kind: 'write' }>, result: WriteResult }

/**
 * What a sync repaired: the row the last acknowledged sync wrote for this very spec had changed, or was missing, so
 * someone changed or deleted it behind the hook's back (or a call of an older generation, sent before and arriving
 * late, wrote over it).
 */
export function driftOf (outcome: SyncOutcome): Drift | undefined {
  if (outcome.kind !== 'write' || outcome.result.kind !== 'done' || !outcome.plan.written) return undefined
  return { nothing: undefined, updated: 'changed' as const, inserted: 'missing' as const }[outcome.result.wrote]
}

function driftRepair (drift: Drift, plan: Extract<SyncPlan, { kind: 'write' }>, policy: TableRules, now: string): DriftRepair {
  const row = `row ${JSON.stringify(plan.row.id)}`
  const table = qualified(policy.schema, plan.table)
  return drift === 'changed'
    ? { time: now, reason: 'RowChanged', message: `${row} in ${table} no longer held what the hook wrote for this generation; written again as the spec says` }
    : { time: now, reason: 'RowMissing', message: `${row} was missing from ${table}, where the hook wrote it for this generation; written again` }
}

export function syncResponse (parent: PostgresWriter, outcome: SyncOutcome, policy: TableRules, now: string): DecoratorResponse {
  let table = parent.status.table
  let readiness: Readiness
  let resyncAfterSeconds: number | undefined
  let releaseToken: string | undefined
  let lastDriftRepair = parent.status.lastDriftRepair
  if (outcome.kind === 'refuse') {
    readiness = { ready: false, ...outcome.refusal }
  } else if (outcome.result.kind === 'failed') {
    readiness = { ready: false, reason: outcome.result.reason, message: outcome.result.message }
    resyncAfterSeconds = outcome.result.retryAfterSeconds
    releaseToken = outcome.result.releaseToken
  } else {
    table = outcome.plan.table
    readiness = { ready: true, reason: 'RowWritten', message: `row ${JSON.stringify(outcome.plan.row.id)} in ${qualified(policy.schema, table)} matches the spec` }
    const drift = driftOf(outcome)
    if (drift !== undefined) lastDriftRepair = driftRepair(drift, outcome.plan, policy, now)
  }
  const status: PostgresWriterStatus = parentStatus(parent, now, statusFields(table, rowId(parent), releaseToken, lastDriftRepair), readiness)
  return { status, attachments: [], ...(resyncAfterSeconds === undefined ? {} : { resyncAfterSeconds }) }
}

/**
 * The status fields of PostgresWriter's own, each left out when undefined. Assigned one by one: V8 makes each property
 * added to an object spread from another cost 0.6 µs.
 */
function statusFields (table: string | undefined, id: string, releaseToken: string | undefined, lastDriftRepair: DriftRepair | undefined): Omit<PostgresWriterStatus, 'observedGeneration' | 'conditions'> {
  const fields: Omit<PostgresWriterStatus, 'observedGeneration' | 'conditions'> = table === undefined ? { id } : { table, id }
  if (releaseToken !== undefined) fields.releaseToken = releaseToken
  if (lastDriftRepair !== undefined) fields.lastDriftRepair = lastDriftRepair
  return fields
}

/** The answer of a finalize: what the database did with the planned finalize. */
export function finalizeResponse (parent: PostgresWriter, plan: FinalizePlan, result: FinalizeResult, policy: TableRules, now: string): DecoratorResponse {
  const id = rowId(parent)
  const { table } = parent.status
  let readiness: Readiness
  let releaseToken: string | undefined
  let retryAfterSeconds: number | undefined
  if (result.kind === 'failed') {
    const pending = plan.policy === 'Delete' ? `row ${JSON.stringify(id)} not deleted yet` : 'not finalized yet'
    readiness = { ready: false, reason: result.reason, message: `${pending}: ${result.message}` }
    retryAfterSeconds = result.retryAfterSeconds
  } else {
    releaseToken = result.releaseToken
    readiness = finalized(id, plan, result.tables, policy)
  }
  const status: PostgresWriterStatus = parentStatus(parent, now, statusFields(table, id, releaseToken, parent.status.lastDriftRepair), readiness)
  return {
    status,
    attachments: [],
    finalized: retryAfterSeconds === undefined,
    ...(retryAfterSeconds === undefined ? {} : { resyncAfterSeconds: retryAfterSeconds })
  }
}

/** What became of the row, for the Ready condition of a finalize that committed. */
function finalized (id: string, plan: FinalizePlan, tables: readonly string[], policy: TableRules): Readiness {
  if (plan.policy === 'Delete') {
    const released = plan.deleting ? '' : ': this PostgresWriter no longer matches the selector of its DecoratorController; its row is written again once it matches'
    return { ready: false, reason: 'RowDeleted', message: `row ${JSON.stringify(id)} deleted from every table of schema ${policy.schema}${released}` }
  }
  const where = tables.length === 0 ? 'no table: the hook never wrote it' : tables.map((table) => qualified(policy.schema, table)).join(' and ')
  const manager = plan.deleting
    ? 'no object manages it now, and a new PostgresWriter of the same name takes it over'
    : 'this PostgresWriter no longer matches the selector of its DecoratorController, and manages its row again once it matches'
  return { ready: false, reason: 'RowOrphaned', message: `row ${JSON.stringify(id)} kept in ${where} (spec.deletionPolicy: Orphan): ${manager}` }
}
