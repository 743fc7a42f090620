import { isDeepStrictEqual } from 'node:util'
import { listMapKey } from '../../hooks/framework/wire/apply.js'
import { fieldPath, SHOWN_KEYS } from '../../dev/metacontroller-apply.js'
import type { ClusterPlan } from '../../dev/plan/plan-cluster.js'
import { describe, type ObjectRef, type PlannedField } from '../../dev/plan/parent-plan.js'
import { isObject } from '../../hooks/framework/wire/objects.js'

/**
 * What changed in the cluster and in PostgreSQL between two snapshots, against what a plan said would change: every
 * difference between the two, in one line each. Nothing the plan does not name may change; what it names must change
 * exactly as it says, field by field (a field stamped with the time of its sync: to any other value).
 */

type Json = Record<string, any>

/** Objects by `Kind namespace/name`. */
export type Objects = Map<string, Json>

/** PostgresWriter rows by `table id`, with their xmin. */
export type Rows = Map<string, { name: unknown, age: unknown, country: unknown, xmin: string }>

/** What is never compared: what the API server changes with every write. */
const IGNORED = new Set(['metadata.resourceVersion', 'metadata.managedFields'])

/** Every leaf of a value by its field path, lists of keyed objects item by item (as the plan names fields). */
export function leaves (value: unknown, prefix: string, into = new Map<string, unknown>()): Map<string, unknown> {
  if (isObject(value) && Object.keys(value).length > 0) {
    for (const [key, inner] of Object.entries(value)) leaves(inner, fieldPath(prefix, key), into)
    return into
  }
  const key = Array.isArray(value) && value.length > 0 ? listMapKey([value], SHOWN_KEYS) : undefined
  if (key !== undefined) {
    for (const item of value as Json[]) leaves(item, `${prefix}[${key}=${String(item[key])}]`, into)
    return into
  }
  into.set(prefix, value)
  return into
}

interface Change { from: unknown, to: unknown, stamped?: boolean, mayStay?: boolean }

const ABSENT = Symbol('absent')

/** The leaves that differ between two values. */
function changedLeaves (before: unknown, after: unknown, prefix: string): Map<string, Change> {
  const [old, next] = [leaves(before, prefix), leaves(after, prefix)]
  const changes = new Map<string, Change>()
  for (const path of new Set([...old.keys(), ...next.keys()])) {
    if (IGNORED.has(path) || [...IGNORED].some((ignored) => path.startsWith(`${ignored}[`) || path.startsWith(`${ignored}.`))) continue
    const from = old.has(path) ? old.get(path) : ABSENT
    const to = next.has(path) ? next.get(path) : ABSENT
    if (!isDeepStrictEqual(from, to)) changes.set(path, { from, to })
  }
  return changes
}

/** The leaves a plan's field changes name; a leaf a stamped field gives the plan's time (`now`) is stamped. */
function plannedLeaves (fields: readonly PlannedField[], prefix: string, now: string): Map<string, Change> {
  const changes = new Map<string, Change>()
  for (const field of fields) {
    const path = prefix === '' ? field.field : field.field.startsWith('[') ? `${prefix}${field.field}` : `${prefix}.${field.field}`
    const before = 'from' in field ? leaves(field.from, path) : new Map()
    const after = 'to' in field ? leaves(field.to, path) : new Map()
    for (const leaf of new Set([...before.keys(), ...after.keys()])) {
      const from = before.has(leaf) ? before.get(leaf) : ABSENT
      const to = after.has(leaf) ? after.get(leaf) : ABSENT
      if (!isDeepStrictEqual(from, to)) changes.set(leaf, { from, to, ...(field.stamped === true && to === now ? { stamped: true } : {}), ...(field.mayStay === true ? { mayStay: true } : {}) })
    }
  }
  return changes
}

const show = (value: unknown): string => value === ABSENT ? '(none)' : JSON.stringify(value)

/** Where the changed leaves of an object differ from the planned ones. */
function fieldDifferences (name: string, planned: Map<string, Change>, actual: Map<string, Change>): string[] {
  const differences: string[] = []
  for (const path of new Set([...planned.keys(), ...actual.keys()])) {
    const plan = planned.get(path)
    const real = actual.get(path)
    if (plan === undefined && real !== undefined) differences.push(`${name}: ${path} changed (${show(real.from)} → ${show(real.to)}), which the plan did not say`)
    else if (plan !== undefined && real === undefined && plan.mayStay !== true) differences.push(`${name}: ${path} did not change, but the plan said ${show(plan.from)} → ${plan.stamped === true ? '(the time of the sync)' : show(plan.to)}`)
    else if (plan !== undefined && real !== undefined && plan.stamped !== true && !isDeepStrictEqual([plan.from, plan.to], [real.from, real.to])) {
      differences.push(`${name}: ${path} changed ${show(real.from)} → ${show(real.to)}, but the plan said ${show(plan.from)} → ${show(plan.to)}`)
    }
  }
  return differences
}

/** Whether every leaf of `expected` is in `actual` with its value. */
function subsetDifferences (name: string, expected: Json, actual: Json): string[] {
  const have = leaves(actual, '')
  return [...leaves(expected, '')].filter(([path, value]) => !isDeepStrictEqual(have.get(path), value))
    .map(([path, value]) => `${name}: created with ${path} ${show(have.has(path) ? have.get(path) : ABSENT)}, but the plan said ${show(value)}`)
}

export function objectKey (ref: ObjectRef): string {
  return describe(ref)
}

/** Every difference between what the plan said and what happened. */
export function planDifferences (plan: ClusterPlan, before: Objects, after: Objects, rowsBefore: Rows, rowsAfter: Rows): string[] {
  const differences: string[] = []
  const named = new Set<string>()
  for (const controller of plan.controllers) {
    for (const parent of controller.parents) {
      const key = objectKey(parent.parent)
      named.add(key)
      const [old, next] = [before.get(key), after.get(key)]
      if (parent.deleted === true) {
        if (next !== undefined) differences.push(`${key}: the plan said it goes, but it is still there`)
      } else if (old === undefined || next === undefined) {
        differences.push(`${key}: ${old === undefined ? 'appeared' : 'disappeared'}, which the plan did not say`)
      } else {
        const planned = new Map([...plannedLeaves(parent.metadata, 'metadata', plan.planned), ...plannedLeaves(parent.status, 'status', plan.planned)])
        differences.push(...fieldDifferences(key, planned, changedLeaves(old, next, '')))
      }
      for (const object of parent.objects) {
        const name = objectKey(object.object)
        named.add(name)
        const [was, is] = [before.get(name), after.get(name)]
        switch (object.action) {
          case 'create':
            if (was !== undefined) differences.push(`${name}: the plan said it is created, but it existed before`)
            if (is === undefined) differences.push(`${name}: the plan said it is created, but it does not exist`)
            else differences.push(...subsetDifferences(name, object.manifest ?? {}, is))
            break
          case 'recreate':
            if (was === undefined || is === undefined) differences.push(`${name}: the plan said it is recreated, but it ${was === undefined ? 'did not exist before' : 'does not exist now'}`)
            else if (was.metadata.uid === is.metadata.uid) differences.push(`${name}: the plan said it is recreated, but it has the same uid`)
            else differences.push(...subsetDifferences(name, object.manifest ?? {}, is))
            break
          case 'delete':
            if (is !== undefined) differences.push(`${name}: the plan said it is deleted, but it is still there${is.metadata.deletionTimestamp === undefined ? '' : ' (being deleted)'}`)
            break
          default:
            if (was === undefined || is === undefined) {
              differences.push(`${name}: the plan said ${object.action}, but it ${was === undefined ? 'did not exist before' : 'is gone'}`)
            } else {
              differences.push(...fieldDifferences(name, plannedLeaves(object.fields === undefined || ['leftAsIs', 'waitForDeletion'].includes(object.action) ? [] : object.fields, '', plan.planned), changedLeaves(was, is, '')))
            }
        }
      }
    }
  }
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    if (named.has(key)) continue
    const [was, is] = [before.get(key), after.get(key)]
    if (was === undefined) differences.push(`${key}: created, which the plan did not say`)
    else if (is === undefined) differences.push(`${key}: deleted, which the plan did not say`)
    else differences.push(...fieldDifferences(key, new Map(), changedLeaves(was, is, '')))
  }
  return [...differences, ...rowDifferences(plan, rowsBefore, rowsAfter)]
}

const DONE = { insert: 'inserted', update: 'updated', delete: 'deleted', none: 'not written' } as const

/** Every difference between what the plan said PostgresWriter writes and what its rows show (their xmin included). */
function rowDifferences (plan: ClusterPlan, before: Rows, after: Rows): string[] {
  const differences: string[] = []
  const planned = new Map<string, Json>()
  for (const controller of plan.controllers) {
    for (const parent of controller.parents) {
      for (const effect of parent.rows) {
        if (effect.action === 'insert' || effect.action === 'update' || effect.action === 'delete') {
          planned.set(`${effect.table.slice(effect.table.indexOf('.') + 1)} ${effect.id}`, effect)
        }
      }
    }
  }
  for (const key of new Set([...before.keys(), ...after.keys(), ...planned.keys()])) {
    const [was, is, effect] = [before.get(key), after.get(key), planned.get(key)]
    const row = `row ${key}`
    const action: keyof typeof DONE = was === undefined ? (is === undefined ? 'none' : 'insert') : is === undefined ? 'delete' : was.xmin === is.xmin ? 'none' : 'update'
    if ((effect?.action ?? 'none') !== action) {
      differences.push(`${row}: ${DONE[action]}, but the plan said ${effect === undefined ? 'nothing' : effect.action}`)
      continue
    }
    if (effect === undefined || action === 'delete') continue
    const columns = Object.fromEntries(['name', 'age', 'country'].filter((column) => was === undefined || !isDeepStrictEqual(was[column as 'name'], is?.[column as 'name'])).map((column) => [column, is?.[column as 'name']]))
    const expected = Object.fromEntries(Object.entries(effect.columns as Record<string, { to: unknown }>).map(([column, { to }]) => [column, to]))
    if (!isDeepStrictEqual(columns, expected)) differences.push(`${row}: wrote ${JSON.stringify(columns)}, but the plan said ${JSON.stringify(expected)}`)
  }
  return differences
}
