import { isDeepStrictEqual } from 'node:util'
import type { ChildResource, Controller } from '../hooks/framework/controller.js'
import { groupKey, isObject } from '../hooks/framework/wire/objects.js'
import type { CompositeResponse, KubernetesObject, ObjectMap } from '../hooks/framework/wire/schemas.js'
import { applyUpdate, LAST_APPLIED_ANNOTATION as LAST_APPLIED, listMapKey, MERGE_KEYS, mergeKeyOf } from '../hooks/framework/wire/apply.js'

/**
 * What Metacontroller v4.17.2 does with a CompositeController's sync answer, with its default apply strategy
 * (`--apply-strategy=dynamic-apply`): which children it deletes, creates, updates, deletes to recreate, or leaves as
 * they are, field by field, and the status it writes. Each rule names the place in Metacontroller's source
 * (github.com/metacontroller/metacontroller, tag v4.17.2) that it follows. The merge of one child is the hook's own
 * model of the apply (hooks/framework/wire/apply.ts), so that the hook and this plan cannot disagree on it.
 */

export { applyUpdate }

type Json = Record<string, any>

/** One field that differs: its path, and its value before and after (absent on the side that has none), or what changes in words. */
export interface FieldChange {
  field: string
  from?: unknown
  to?: unknown
  note?: string
}

/** How a field is named: `a.b`, or `a["b.c"]` for a key that is not an identifier. */
export function fieldPath (prefix: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? (prefix === '' ? key : `${prefix}.${key}`) : `${prefix}[${JSON.stringify(key)}]`
}

/** What a list's items are told apart by where it is shown: the merge keys, and a condition's type. */
export const SHOWN_KEYS = [...MERGE_KEYS, 'type']

/** Every field that differs between `before` and `after`; a list of objects with a key is compared item by item. */
export function fieldChanges (before: unknown, after: unknown, prefix = ''): FieldChange[] {
  if (isDeepStrictEqual(before, after)) return []
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    return keys.flatMap((key) => {
      const path = fieldPath(prefix, key)
      if (!Object.hasOwn(after, key)) return [{ field: path, from: before[key] }]
      if (!Object.hasOwn(before, key)) return [{ field: path, to: after[key] }]
      return fieldChanges(before[key], after[key], path)
    })
  }
  const key = Array.isArray(before) && Array.isArray(after) && before.length > 0 && after.length > 0 ? listMapKey([before, after], SHOWN_KEYS) : undefined
  if (key !== undefined) {
    const byKey = (list: unknown[]): Map<string, Json> => new Map((list as Json[]).map((item) => [mergeKeyOf(item, key), item]))
    const [old, next] = [byKey(before as unknown[]), byKey(after as unknown[])]
    return [...new Set([...old.keys(), ...next.keys()])].flatMap((itemKey) => {
      const path = `${prefix}[${key}=${itemKey}]`
      if (!next.has(itemKey)) return [{ field: path, from: old.get(itemKey) }]
      if (!old.has(itemKey)) return [{ field: path, to: next.get(itemKey) }]
      return fieldChanges(old.get(itemKey), next.get(itemKey), path)
    })
  }
  return [{ field: prefix, from: before, to: after }]
}

/**
 * The fields Metacontroller's write would change in a child. The last-applied annotation changes with every other
 * field, so it is named only where nothing else changes: the answer then sets fields to the values they have.
 */
function childFieldChanges (observed: KubernetesObject, merged: KubernetesObject): FieldChange[] {
  const changes = fieldChanges(observed, merged)
  const annotation = fieldPath('metadata.annotations', LAST_APPLIED)
  const others = changes.filter(({ field }) => field !== annotation)
  if (others.length > 0 || changes.length === 0) return others
  return [{ field: annotation, note: 'this answer, to merge the next one with: the fields it sets already have the values it gives them' }]
}

/** A child as a person names it: `Pod default/web-0`. */
export function childName (object: KubernetesObject): string {
  const { namespace, name } = object.metadata
  return `${object.kind} ${namespace === undefined || namespace === '' ? '' : `${namespace}/`}${String(name)}`
}

export type UpdateStrategy = ChildResource['updateStrategy']
type Composite = Extract<Controller, { type: 'composite' }>

export interface ChildChange {
  child: string
  strategy?: UpdateStrategy
  fields: FieldChange[]
}

/** What Metacontroller would do, in the order it does it: deletions first, then creations and updates. */
export interface Plan {
  /** Observed, not being deleted, and not in the answer (manage_children.go:205-243). */
  delete: string[]
  create: string[]
  /** InPlace: the merged object is written over the observed one (manage_children.go:591-606). */
  update: ChildChange[]
  /** Recreate: deleted now, and created again by the next sync (manage_children.go:589-590, 520-546). */
  recreate: ChildChange[]
  /** OnDelete, or a kind without a strategy: differs, and Metacontroller leaves it until someone deletes it (manage_children.go:587-588, 548-553). */
  leftAsIs: ChildChange[]
  /** Differs, but is being deleted: left alone, and created again once it is gone if the answer still has it (manage_children.go:579-583). */
  waitForDeletion: ChildChange[]
  /** Not in the answer, and already being deleted: nothing more to do (manage_children.go:208-211). */
  beingDeleted: string[]
  unchanged: string[]
  /** The parent's status, written whole when it differs (composite/controller.go:879-899). */
  status: FieldChange[]
  /** Why Metacontroller would touch no child at all, when it would not. */
  childrenUnmanaged?: string
  /** Children Metacontroller's sync would fail on, and why: the rest of them are still planned (manage_children.go:146-148). */
  errors: string[]
}

/** The update method of a child kind, matched by API group and kind as Metacontroller does (rolling_update.go:309-319, 347-366): OnDelete when none is given. */
export function strategyOf (childResources: ReadonlyArray<Pick<ChildResource, 'apiVersion' | 'kind' | 'updateStrategy'>>, child: KubernetesObject): UpdateStrategy {
  const group = (apiVersion: string): string => apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''
  return childResources.find((resource) => group(resource.apiVersion) === group(child.apiVersion) && resource.kind === child.kind)?.updateStrategy ?? 'OnDelete'
}

/** An observed child whose merged object differs from it: what Metacontroller compared, and what it would write. */
export interface ChildUpdate extends ChildChange {
  observed: KubernetesObject
  /** The desired child as Metacontroller applies it. */
  desired: KubernetesObject
  /** The observed child with the answer merged in: what an InPlace update writes. */
  merged: KubernetesObject
}

/** What Metacontroller's ManageChildren does with desired children over observed ones, object by object. */
export interface ChildrenPlan {
  delete: KubernetesObject[]
  create: KubernetesObject[]
  update: ChildUpdate[]
  recreate: ChildUpdate[]
  leftAsIs: ChildUpdate[]
  waitForDeletion: ChildUpdate[]
  beingDeleted: KubernetesObject[]
  unchanged: KubernetesObject[]
  errors: string[]
}

/** How Metacontroller tells children apart: kind, API version, namespace and name. */
export const identity = (object: KubernetesObject): string => `${groupKey(object.kind, object.apiVersion)} ${childName(object)}`

/**
 * What Metacontroller's ManageChildren does (manage_children.go) with `desired`, children as Metacontroller applies
 * them (in a namespace, with the labels or annotations it adds), over the observed children: it deletes those the
 * answer leaves out, creates those not observed, and updates, deletes to recreate or leaves the others by the update
 * strategy of their kind, when the three-way merge changes them.
 */
export function planChildren (observed: ObjectMap, desired: readonly KubernetesObject[], strategy: (child: KubernetesObject) => UpdateStrategy): ChildrenPlan {
  const plan: ChildrenPlan = { delete: [], create: [], update: [], recreate: [], leftAsIs: [], waitForDeletion: [], beingDeleted: [], unchanged: [], errors: [] }
  const wanted = new Map(desired.map((child) => [identity(child), child]))
  const observedByKey = new Map(Object.values(observed).flatMap((objects) => Object.values(objects)).map((object) => [identity(object), object]))

  for (const [key, object] of observedByKey) {
    if (wanted.has(key)) continue
    if (object.metadata.deletionTimestamp === undefined) plan.delete.push(object)
    else plan.beingDeleted.push(object)
  }
  for (const [key, child] of wanted) {
    const current = observedByKey.get(key)
    if (current === undefined) {
      plan.create.push(child)
      continue
    }
    let merged: KubernetesObject
    try {
      merged = applyUpdate(current, child)
    } catch (error) {
      plan.errors.push(`${childName(child)}: ${(error as Error).message}`)
      continue
    }
    const fields = childFieldChanges(current, merged)
    if (fields.length === 0) {
      plan.unchanged.push(current)
      continue
    }
    const method = strategy(child)
    const change = { child: childName(child), strategy: method, fields, observed: current, desired: child, merged }
    if (current.metadata.deletionTimestamp !== undefined) plan.waitForDeletion.push(change)
    else if (method === 'InPlace') plan.update.push(change)
    else if (method === 'Recreate') plan.recreate.push(change)
    else plan.leftAsIs.push(change)
  }
  return plan
}

/** The desired child as a CompositeController applies it: in the parent's namespace where it names none (composite/hooks.go:153-158), with the `controller-uid` label of the generated selector (composite/controller.go:690-713). */
export function asAppliedChild (parent: KubernetesObject, child: KubernetesObject): KubernetesObject {
  return { ...child, metadata: { ...child.metadata, namespace: inNamespaceOf(parent, child), labels: { ...child.metadata.labels, 'controller-uid': String(parent.metadata.uid) } } }
}

/** A desired child's namespace: its own, or the parent's where it names none (hooks.go applyNamespaceDefaults). */
export function inNamespaceOf (parent: KubernetesObject, child: KubernetesObject): string | undefined {
  const { namespace } = child.metadata
  return namespace === undefined || namespace === '' ? parent.metadata.namespace : namespace
}

const changeOf = ({ child, strategy, fields }: ChildUpdate): ChildChange => ({ child, strategy, fields })

/**
 * What Metacontroller would do with `answer` for `parent`, whose children are `observed` (as the sync request had
 * them). The desired children get the parent's namespace and the `controller-uid` label, as Metacontroller gives them.
 */
export function planSync (controller: Composite, parent: KubernetesObject, observed: ObjectMap, answer: CompositeResponse): Plan {
  const plan: Plan = { delete: [], create: [], update: [], recreate: [], leftAsIs: [], waitForDeletion: [], beingDeleted: [], unchanged: [], status: [], errors: [] }
  const uid = String(parent.metadata.uid)
  const foreign = answer.children.find((child) => child.metadata.labels?.['controller-uid'] !== undefined && child.metadata.labels['controller-uid'] !== uid)
  if (foreign !== undefined) {
    plan.errors.push(`${childName(foreign)}: its controller-uid label ${String(foreign.metadata.labels?.['controller-uid'])} does not match the parent's selector (controller-uid=${uid}), so Metacontroller refuses the whole answer and changes nothing, its status neither (composite/controller.go:708-712)`)
    return plan
  }
  plan.status = fieldChanges(parent.status ?? {}, { ...answer.status, observedGeneration: parent.metadata.generation ?? 0 })

  if (parent.metadata.deletionTimestamp !== undefined && controller.hooks.finalize === undefined) {
    plan.childrenUnmanaged = `${parent.kind} ${parent.metadata.namespace ?? ''}/${String(parent.metadata.name)} is being deleted and ${controller.name} has no finalize hook, so Metacontroller creates, updates and deletes no child; the garbage collector deletes them (composite/controller.go:719-728)`
    return plan
  }
  const children = planChildren(observed, answer.children.map((child) => asAppliedChild(parent, child)), (child) => strategyOf(controller.childResources, child))
  return {
    ...plan,
    delete: children.delete.map(childName),
    create: children.create.map(childName),
    update: children.update.map(changeOf),
    recreate: children.recreate.map(changeOf),
    leftAsIs: children.leftAsIs.map(changeOf),
    waitForDeletion: children.waitForDeletion.map(changeOf),
    beingDeleted: children.beingDeleted.map(childName),
    unchanged: children.unchanged.map(childName),
    errors: children.errors
  }
}
