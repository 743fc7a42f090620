import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { StringDecoder } from 'node:string_decoder'
import { join } from 'node:path'
import { LAST_APPLIED_ANNOTATION } from '../../hooks/framework/wire/apply.js'
import { total, type ControllerTotals, type Summary } from './controller-plan.js'
import { describe, type ObjectPlan, type ParentPlan, type PlannedField } from './parent-plan.js'
import type { ControllerName, ExitCode, PlanHeading, PlanReport } from './plan-cluster.js'
import type { RowEffect } from './postgres-writer.js'

/**
 * The plan as a person reads it: a summary table per controller first, then, for every parent that would change or
 * is refused, what Metacontroller would do object by object, field by field, and what PostgresWriter would write.
 */

const COLUMNS: Array<[keyof Summary, string]> = [
  ['parents', 'PARENTS'], ['read', 'OBJECTS READ'], ['unchanged', 'UNCHANGED'], ['change', 'WOULD CHANGE'], ['create', 'WOULD CREATE'], ['refused', 'REFUSED'], ['rows', 'ROW WRITES']
]

export const EXIT_MEANINGS: Record<ExitCode, string> = {
  0: 'nothing would change',
  1: 'something would change',
  2: 'the plan could not be made, or not whole',
  3: 'the new code refuses, fails on or loops on some parents'
}

/** The summary table: one row per controller, and a total. */
export function summaryTable (plans: readonly ControllerTotals[]): string {
  const rows = [
    ['CONTROLLER', ...COLUMNS.map(([, title]) => title)],
    ...plans.map((plan) => [plan.controller, ...COLUMNS.map(([key]) => plan.skipped === undefined ? String(plan.summary[key]) : '-')]),
    ...(plans.length > 1 ? [['total', ...COLUMNS.map(([key]) => String(total(plans)[key]))]] : [])
  ]
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  return rows.map((row) => row.map((cell, column) => column === 0 ? cell.padEnd(widths[0] ?? 0) : cell.padStart(widths[column] ?? 0)).join('  ').trimEnd()).join('\n')
}

/** A value in one line, cut where it is long. */
export function shown (value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined'
  return text.length > 100 ? `${text.slice(0, 97)}...` : text
}

const LAST_APPLIED = `metadata.annotations[${JSON.stringify(LAST_APPLIED_ANNOTATION)}]`

export function fieldLine (field: PlannedField): string {
  if (field.note !== undefined) return `${field.field}: ${field.note}`
  if (field.field === LAST_APPLIED) return `${field.field}: the new answer, which the next three-way merge starts from`
  const to = field.stamped !== true ? shown(field.to) : typeof field.to === 'string' ? '(the time of the sync)' : `${shown(field.to)} (its time: the time of the sync)`
  const line = !('from' in field)
    ? `${field.field}: (added) ${to}`
    : !('to' in field) ? `${field.field}: ${shown(field.from)} (removed)` : `${field.field}: ${shown(field.from)} → ${to}`
  return field.mayStay === true ? `${line}, or stays as it is if Metacontroller's last sync reads the status from before` : line
}

export function rowLine (effect: RowEffect): string {
  switch (effect.action) {
    case 'createHookTables': return `create PostgresWriter's own tables in schema ${effect.schema}`
    case 'createTable': return `create table ${effect.table}`
    case 'insert': return `insert into ${effect.table} row ${shown(effect.id)}: ${Object.entries(effect.columns).map(([column, { to }]) => `${column} ${shown(to)}`).join(', ')}`
    case 'update': return `update ${effect.table} row ${shown(effect.id)}: ${Object.entries(effect.columns).map(([column, { from, to }]) => `${column} ${shown(from)} → ${shown(to)}`).join(', ')}`
    case 'delete': return `delete from ${effect.table} row ${shown(effect.id)}`
  }
}

const ACTION_WIDTH = 15

function objectLines (object: ObjectPlan): string[] {
  const strategy = object.strategy === undefined ? '' : ` (${object.strategy})`
  return [`${object.action.padEnd(ACTION_WIDTH)} ${describe(object.object)}${strategy}`, ...(object.fields ?? []).map((field) => `${' '.repeat(ACTION_WIDTH + 3)}${fieldLine(field)}`)]
}

const OUTCOMES: Record<ParentPlan['outcome'], string> = {
  changes: 'would change',
  unchanged: 'unchanged',
  refused: 'REFUSED',
  error: 'ERROR',
  loops: 'LOOPS',
  ignored: 'ignored'
}

/** One parent's details. */
export function parentDetails (controller: string, parent: ParentPlan): string {
  const lines = [`${controller} › ${describe(parent.parent)}: ${OUTCOMES[parent.outcome]} (${parent.hook ?? 'no'} hook, ${parent.syncs} ${parent.syncs === 1 ? 'sync' : 'syncs'})`]
  const indent = (text: string): string => `  ${text}`
  if (parent.message !== undefined) lines.push(indent(parent.message))
  for (const error of parent.errors) lines.push(indent(`error: ${error}`))
  if (parent.deleted === true) lines.push(indent(`the ${parent.parent.kind} goes: its last finalizer is removed`))
  for (const object of parent.objects.filter((object) => object.action !== 'unchanged')) lines.push(...objectLines(object).map(indent))
  const unchanged = parent.objects.filter((object) => object.action === 'unchanged')
  if (unchanged.length > 0) lines.push(indent(`${'unchanged'.padEnd(ACTION_WIDTH)} ${unchanged.map((object) => describe(object.object)).join(', ')}`))
  if (parent.metadata.length > 0) lines.push(indent('metadata'), ...parent.metadata.map((field) => indent(indent(fieldLine(field)))))
  if (parent.status.length > 0) lines.push(indent('status'), ...parent.status.map((field) => indent(indent(fieldLine(field)))))
  if (parent.rows.length > 0) lines.push(indent('PostgreSQL'), ...parent.rows.map((effect) => indent(indent(rowLine(effect)))))
  return lines.join('\n')
}

/** Where a report writes: a promise that settles once the text may be let go (a stream that drains). */
export type Write = (text: string) => Promise<void>

function heading (plan: PlanHeading): string {
  const where = plan.scope.namespace === undefined ? 'all namespaces' : `namespace ${plan.scope.namespace}`
  const selector = plan.scope.selector === undefined ? '' : `, parents labelled ${plan.scope.selector}`
  return `Plan of this checkout's hooks against ${plan.server}${plan.context === undefined ? '' : ` (context ${plan.context})`}, ${where}${selector}, at ${plan.planned}`
}

const CHUNK = 64 * 1024

/**
 * The plan as text: the heading and the summary table first, then every parent that would change or is refused,
 * then the errors and the exit code. The summary is known only at the end, so the parents' details wait in a file
 * until then, not in memory.
 */
export class TextReport implements PlanReport {
  private readonly dir = mkdtempSync(join(tmpdir(), 'plan-'))
  private readonly spool = openSync(join(this.dir, 'details'), 'w+')
  private written = 0

  constructor (private readonly heading: PlanHeading, private readonly write: Write) {}

  async parent (controller: ControllerName, plan: ParentPlan): Promise<void> {
    if (plan.outcome === 'unchanged') return
    this.written += writeSync(this.spool, `${this.written === 0 ? '' : '\n\n'}${parentDetails(controller.controller, plan)}`)
  }

  async controller (): Promise<void> {}

  async end (controllers: readonly ControllerTotals[], errors: readonly string[], exitCode: ExitCode): Promise<void> {
    try {
      const sections = [heading(this.heading), summaryTable(controllers)]
      const notes = controllers.filter((controller) => controller.skipped !== undefined).map((controller) => `${controller.controller}: ${controller.skipped ?? ''}`)
      if (notes.length > 0) sections.push(notes.join('\n'))
      await this.write(`${sections.join('\n\n')}\n\n`)
      const buffer = Buffer.alloc(CHUNK)
      // A chunk may end inside a character: the decoder keeps its first bytes for the next.
      const decoder = new StringDecoder('utf8')
      for (let at = 0; at < this.written;) {
        const read = readSync(this.spool, buffer, 0, CHUNK, at)
        await this.write(decoder.write(buffer.subarray(0, read)))
        at += read
      }
      const tail = [...(errors.length > 0 ? [errors.map((error) => `error: ${error}`).join('\n')] : []), `exit ${exitCode}: ${EXIT_MEANINGS[exitCode]}`]
      await this.write(`${this.written === 0 ? '' : '\n\n'}${tail.join('\n\n')}\n`)
    } finally {
      closeSync(this.spool)
      rmSync(this.dir, { recursive: true, force: true })
    }
  }
}

/** A value as JSON, indented 2 spaces a level, at `depth` levels in. */
function indented (value: unknown, depth: number): string {
  return JSON.stringify(value, null, 2).replaceAll('\n', `\n${'  '.repeat(depth)}`)
}

/**
 * The plan as one JSON document (ClusterPlan), written as it is made: each parent's element as it is planned, each
 * controller's summary after its parents.
 */
export class JsonReport implements PlanReport {
  private open: string | undefined
  private parents = 0
  private controllers = 0

  constructor (private readonly heading: PlanHeading, private readonly write: Write) {}

  private headingFields (): string {
    return Object.entries(this.heading).filter(([, value]) => value !== undefined).map(([key, value]) => `  ${JSON.stringify(key)}: ${indented(value, 1)},\n`).join('')
  }

  private async start ({ controller, kind }: ControllerName): Promise<void> {
    if (this.open === controller) return
    const before = this.controllers === 0 ? `{\n${this.headingFields()}  "controllers": [\n` : ',\n'
    await this.write(`${before}    {\n      "controller": ${JSON.stringify(controller)},\n      "kind": ${JSON.stringify(kind)},\n      "parents": [`)
    this.open = controller
    this.controllers++
    this.parents = 0
  }

  async parent (controller: ControllerName, plan: ParentPlan): Promise<void> {
    await this.start(controller)
    await this.write(`${this.parents++ === 0 ? '\n' : ',\n'}        ${indented(plan, 4)}`)
  }

  async controller (totals: ControllerTotals): Promise<void> {
    await this.start(totals)
    const rest = Object.entries(totals).filter(([key]) => key !== 'controller' && key !== 'kind').map(([key, value]) => `,\n      ${JSON.stringify(key)}: ${indented(value, 3)}`).join('')
    await this.write(`${this.parents === 0 ? '' : '\n      '}]${rest}\n    }`)
    this.open = undefined
  }

  async end (_controllers: readonly ControllerTotals[], errors: readonly string[], exitCode: ExitCode): Promise<void> {
    await this.write(this.controllers === 0 ? `{\n${this.headingFields()}  "controllers": [` : '\n  ')
    await this.write(`],\n  "errors": ${indented(errors, 1)},\n  "exitCode": ${exitCode}\n}\n`)
  }
}
