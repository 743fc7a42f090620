import { isDeepStrictEqual } from 'node:util'
import type { Controller, HookName } from '../../hooks/framework/controller.js'
import { groupKey, isObject } from '../../hooks/framework/wire/objects.js'
import { goJson, LAST_APPLIED_ANNOTATION } from '../../hooks/framework/wire/apply.js'
import type { KubernetesObject, ObjectMap } from '../../hooks/framework/wire/schemas.js'
import { asAppliedChild, childName, fieldChanges, identity, inNamespaceOf, planChildren, type ChildUpdate, type FieldChange } from '../metacontroller-apply.js'
import { finalizerName, type ChildRule, type ControllerObject } from './controller-objects.js'
import type { HookRunner } from './hook-runner.js'
import type { Json } from './kube-api.js'
import type { RowEffect } from './postgres-writer.js'
import { selects, selectsAnnotations, type LabelSelector } from './selectors.js'

/**
 * What Metacontroller would do to one parent and its children, sync after sync, with this checkout's hook answering,
 * until a sync changes nothing: its finalizer, the children it claims (adopting orphans its selector matches,
 * releasing its own that it no longer matches), the hook it calls, the children it deletes, creates, updates or
 * deletes to recreate by their kind's update strategy (planChildren), and the status and metadata it writes. Between
 * two syncs the cluster is taken to hold exactly what Metacontroller wrote (each object created as the API server
 * creates it: see `asCreated`); nothing else in the cluster is taken to act. The rules follow Metacontroller v4.17.2
 * (pkg/controller/composite/controller.go, pkg/controller/decorator/controller.go,
 * pkg/dynamic/controllerref, pkg/controller/common/finalizer).
 */

/** A sync that would still change something after this many is a loop: Metacontroller would never settle. */
export const MAX_SYNCS = 8

export const DECORATOR_ANNOTATION = 'metacontroller.k8s.io/decorator-controller'

export interface ObjectRef {
  apiVersion: string
  kind: string
  namespace?: string
  name: string
}

/**
 * A changed field. `stamped`: its new value is, or holds, the time of the sync that writes it (a condition's
 * lastTransitionTime): the plan's own time stands for it. `mayStay`: it changes only through the status of a sync in
 * between, which Metacontroller's cache may not hold yet when it makes the last sync: it may also stay as it is.
 */
export interface PlannedField extends FieldChange {
  stamped?: true
  mayStay?: true
}

export type ObjectAction = 'create' | 'update' | 'delete' | 'recreate' | 'adopt' | 'release' | 'leftAsIs' | 'waitForDeletion' | 'unchanged'

export interface ObjectPlan {
  object: ObjectRef
  action: ObjectAction
  /** The update strategy of its kind, for a child the answer changes. */
  strategy?: string
  fields?: PlannedField[]
  /** What Metacontroller creates: `create` and `recreate`. */
  manifest?: Json
}

/**
 * `unchanged`: Metacontroller would write nothing. `changes`: it would. `refused`: this checkout's hook answers the
 * parent InvalidSpec, or refuses it (a status code Metacontroller reports in a SyncError event). `error`: the hook
 * fails (500), or Metacontroller's sync would fail on what it answers. `loops`: the syncs never stop changing
 * something. `ignored`: Metacontroller does not act on the parent (its controller's selector leaves it out).
 */
export type ParentOutcome = 'unchanged' | 'changes' | 'refused' | 'error' | 'loops' | 'ignored'

export interface ParentPlan {
  parent: ObjectRef
  outcome: ParentOutcome
  /** The hook of the first sync. */
  hook: HookName | undefined
  /** Syncs until one changed nothing (or the last one planned). */
  syncs: number
  /** Why it is refused, failed, loops or is ignored. */
  message?: string
  /** Its finalizers, labels and annotations. */
  metadata: PlannedField[]
  status: PlannedField[]
  /** The parent goes: its last finalizer is removed while it is being deleted. */
  deleted?: true
  /** Every child it had or will have, by what happens to it. */
  objects: ObjectPlan[]
  /** What PostgresWriter's statements would do. */
  rows: RowEffect[]
  /** What Metacontroller's sync would fail on: the rest of the sync still happens. */
  errors: string[]
}

export interface ParentInput {
  /** The controller object in the cluster. */
  model: ControllerObject
  /** This checkout's controller. */
  controller: Controller
  parent: Json
  /** The objects of the controller's child kinds that the parent controls or could adopt. */
  candidates: readonly Json[]
  /** Whether an object of that identity exists (kind, API version, namespace, name), whoever controls it. */
  exists: (identity: string) => boolean
  now: string
  run: HookRunner
}

export function refOf (object: Json): ObjectRef {
  const namespace = object.metadata?.namespace
  return { apiVersion: String(object.apiVersion), kind: String(object.kind), ...(typeof namespace === 'string' && namespace !== '' ? { namespace } : {}), name: String(object.metadata?.name) }
}

const finalizersOf = (object: Json): string[] => Array.isArray(object.metadata?.finalizers) ? object.metadata.finalizers : []
const deleting = (object: Json): boolean => object.metadata?.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null

function controllerUidOf (object: Json): string | undefined {
  const refs: Json[] = Array.isArray(object.metadata?.ownerReferences) ? object.metadata.ownerReferences : []
  return refs.find((ref) => ref.controller === true)?.uid
}

function withMetadata (object: Json, metadata: Json): Json {
  return { ...object, metadata: { ...object.metadata, ...metadata } }
}

function withoutFinalizer (object: Json, name: string): Json {
  const rest = finalizersOf(object).filter((finalizer) => finalizer !== name)
  const { finalizers: _, ...metadata } = object.metadata
  return { ...object, metadata: rest.length === 0 ? metadata : { ...metadata, finalizers: rest } }
}

function controllerRef (parent: Json): Json {
  return { apiVersion: parent.apiVersion, kind: parent.kind, name: parent.metadata.name, uid: parent.metadata.uid, controller: true, blockOwnerDeletion: true }
}

/**
 * The kinds whose objects have a generation, which the API server raises when anything but metadata and status
 * changes: every kind of an API group (apps, batch, custom resources); of the core group's kinds, none that a hook
 * here reads it of.
 */
const hasGeneration = (object: Json): boolean => String(object.apiVersion).includes('/')

/** `written` as the API server stores it over `before`: its generation raised when more than metadata and status changed. */
function stored (before: Json, written: Json): Json {
  if (typeof before.metadata?.generation !== 'number') return written
  const { metadata: _m, status: _s, ...content } = before
  const { metadata: _wm, status: _ws, ...next } = written
  return isDeepStrictEqual(content, next) ? written : withMetadata(written, { generation: before.metadata.generation + 1 })
}

/**
 * What Metacontroller sends to create a child (manage_children.go Apply): the desired object as applied, recorded in
 * its last-applied annotation, with the parent's controller reference added unless it has one.
 */
function creation (parent: Json, applied: Json): Json {
  const refs: Json[] = Array.isArray(applied.metadata?.ownerReferences) ? applied.metadata.ownerReferences : []
  const owned = refs.some((ref) => ref.uid === parent.metadata.uid)
  return withMetadata(applied, {
    annotations: { ...applied.metadata?.annotations, [LAST_APPLIED_ANNOTATION]: goJson(applied) },
    ownerReferences: owned ? refs : [...refs, controllerRef(parent)]
  })
}

/**
 * A created object as the API server returns it, as far as a hook here reads it: a Pod is Pending and a claim
 * Pending until others act (the create strategies of both set it), and a kind of an API group starts at
 * generation 1.
 */
function asCreated (object: Json): Json {
  const pending = object.apiVersion === 'v1' && (object.kind === 'Pod' || object.kind === 'PersistentVolumeClaim')
  return {
    ...withMetadata(object, hasGeneration(object) ? { generation: 1 } : {}),
    ...(pending ? { status: { phase: 'Pending' } } : {})
  }
}

/** The key of a child in a request's map: v2 `namespace/name`; v1 `name`, unless the parent has no namespace. */
function requestKey (child: Json, parentNamespaced: boolean, version: 'v1' | 'v2'): string {
  const { namespace, name } = child.metadata
  const namespaced = typeof namespace === 'string' && namespace !== ''
  return namespaced && (version === 'v2' || !parentNamespaced) ? `${namespace}/${name}` : String(name)
}

/** Observed children as a request's map: one group per child rule, present even when empty. */
function requestChildren (rules: readonly ChildRule[], children: readonly Json[], parentNamespaced: boolean, version: 'v1' | 'v2'): ObjectMap {
  const map: ObjectMap = Object.fromEntries(rules.map((rule) => [groupKey(rule.kind, rule.apiVersion), {}]))
  for (const child of children) {
    const group = map[groupKey(child.kind, child.apiVersion)]
    if (group !== undefined) group[requestKey(child, parentNamespaced, version)] = child as KubernetesObject
  }
  return map
}

/** The same children keyed by identity, as planChildren takes them. */
function byIdentity (children: readonly Json[]): ObjectMap {
  return { all: Object.fromEntries(children.map((child) => [identity(child as KubernetesObject), child as KubernetesObject])) }
}

const statusOf = (object: Json): Json => isObject(object.status) ? object.status : {}

function metadataShown (object: Json): Json {
  const { finalizers, labels, annotations } = object.metadata ?? {}
  return { ...(finalizers === undefined ? {} : { finalizers }), ...(labels === undefined ? {} : { labels }), ...(annotations === undefined ? {} : { annotations }) }
}

/** Whether `value` is, or holds, `now`. */
function holds (value: unknown, now: string): boolean {
  if (value === now) return true
  return typeof value === 'object' && value !== null && Object.values(value).some((inner) => holds(inner, now))
}

/** The stamp of a change whose new value is, or holds, the time of the sync. */
function stamped (fields: FieldChange[], now: string): PlannedField[] {
  return fields.map((field) => holds(field.to, now) ? { ...field, stamped: true } : field)
}

/** A status that says the hook refused the spec: Ready=False, reason InvalidSpec. */
function invalidSpecMessage (status: unknown): string | undefined {
  const conditions = isObject(status) && Array.isArray(status.conditions) ? status.conditions as Json[] : []
  const ready = conditions.find((condition) => condition.type === 'Ready')
  return ready?.reason === 'InvalidSpec' ? String(ready.message) : undefined
}

/** One sync of the parent: what changed, and whether the loop goes on. */
interface Sync {
  changed: boolean
  stop: boolean
}

/** The parent's plan, from the first sync until one changes nothing. */
export async function planParent (input: ParentInput): Promise<ParentPlan> {
  const { model, controller, now, run } = input
  const composite = model.type === 'composite'
  const finalizer = finalizerName(model)
  const rule = model.parents.find((candidate) => candidate.kind === input.parent.kind && candidate.apiVersion.split('/')[0] === String(input.parent.apiVersion).split('/')[0]) ?? model.parents[0]
  const parentNamespaced = rule?.namespaced ?? true
  const matchesSelector = (parent: Json): boolean => rule !== undefined && selects(rule.labelSelector, parent.metadata?.labels) && selectsAnnotations(rule.annotationSelector, parent.metadata?.annotations)

  const plan: ParentPlan = { parent: refOf(input.parent), outcome: 'unchanged', hook: undefined, syncs: 0, metadata: [], status: [], objects: [], rows: [], errors: [] }
  const first = input.parent
  let parent = input.parent
  /** Every object of the child kinds the parent could see, as the simulated cluster holds it. */
  const world = new Map(input.candidates.map((object) => [identity(object as KubernetesObject), object]))
  const initiallyOwned = new Set<string>()
  const recreated = new Map<string, ChildUpdate>()
  const deletedOnce = new Set<string>()
  const adopted = new Set<string>()
  const released = new Set<string>()
  let left: ChildUpdate[] = []
  let waiting: ChildUpdate[] = []
  let refusal: string | undefined
  let failure: string | undefined
  let loops = false
  /** The last sync's hook and request, and how many syncs wrote a status. */
  let last: { hook: HookName, request: Json } | undefined
  let statusWrites = 0

  if (!matchesSelector(parent) && !finalizersOf(parent).includes(finalizer)) {
    return { ...plan, outcome: 'ignored', message: `${model.type === 'composite' ? 'CompositeController' : 'DecoratorController'} ${model.name}'s selector does not match it, and it has no ${finalizer} finalizer` }
  }

  /** The children the parent claims (ClaimChildren), adopting and releasing as Metacontroller does. */
  const claim = (): Json[] => {
    const uid = parent.metadata.uid
    if (!composite) {
      // A decorator observes only what it created: controlled by the parent, and annotated with its name.
      return [...world.values()].filter((object) => controllerUidOf(object) === uid && object.metadata?.annotations?.[DECORATOR_ANNOTATION] === model.name)
    }
    const selector: LabelSelector = model.generateSelector ? { matchLabels: { 'controller-uid': uid } } : parent.spec?.selector ?? {}
    if (!model.generateSelector && Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
      throw new SyncFailure('.spec.selector must have either matchLabels, matchExpressions, or both (Metacontroller\'s sync fails on it)')
    }
    const claimed: Json[] = []
    for (const [key, object] of world) {
      if (!model.children.some((child) => child.kind === object.kind && child.apiVersion === object.apiVersion)) continue
      const owner = controllerUidOf(object)
      const matches = selects(selector, object.metadata?.labels)
      if (owner !== undefined) {
        if (owner !== uid) continue
        if (matches) {
          claimed.push(object)
        } else if (!deleting(parent)) {
          world.set(key, { ...object, metadata: { ...object.metadata, ownerReferences: object.metadata.ownerReferences.filter((ref: Json) => ref.uid !== uid) } })
          released.add(key)
        }
        continue
      }
      if (deleting(parent) || !matches || deleting(object)) continue
      const refs: Json[] = (object.metadata.ownerReferences ?? []).filter((ref: Json) => ref.uid !== uid)
      const owned = withMetadata(object, { ownerReferences: [...refs, controllerRef(parent)] })
      world.set(key, owned)
      adopted.add(key)
      claimed.push(owned)
    }
    return claimed
  }

  const sync = async (round: number): Promise<Sync> => {
    let changed = false
    const selected = matchesSelector(parent)
    if (!selected && !finalizersOf(parent).includes(finalizer)) return { changed, stop: true }
    // finalizer.SyncObject: added to a parent that is not being deleted, removed when there is no finalize hook.
    const has = finalizersOf(parent).includes(finalizer)
    if (model.finalize && !has && !deleting(parent)) {
      parent = withMetadata(parent, { finalizers: [...finalizersOf(parent), finalizer] })
      changed = true
    } else if (!model.finalize && has) {
      parent = withoutFinalizer(parent, finalizer)
      changed = true
    }
    if (!selected && !finalizersOf(parent).includes(finalizer)) return { changed, stop: true }

    const claims = adopted.size + released.size
    const observed = claim()
    if (round === 1) for (const object of observed) initiallyOwned.add(identity(object as KubernetesObject))
    if (adopted.size + released.size > claims) changed = true

    const finalizing = model.finalize && (deleting(parent) || !selected)
    const hook: HookName = finalizing ? 'finalize' : 'sync'
    plan.hook ??= hook
    const request = composite
      ? { controller: model.object, parent, children: requestChildren(model.children, observed, parentNamespaced, model.hookVersion), related: {}, finalizing }
      : { controller: model.object, object: parent, attachments: requestChildren(model.children, observed, parentNamespaced, model.hookVersion), related: {}, finalizing }
    last = { hook, request }
    const outcome = await run(controller, hook, request)
    plan.rows.push(...outcome.rows)
    // A write to PostgreSQL changes what the next sync reads there.
    if (outcome.rows.length > 0) changed = true
    if (outcome.kind === 'refused') {
      refusal = `the ${hook} hook answers ${outcome.statusCode}: ${outcome.message} (Metacontroller changes nothing more, shows this in a SyncError event on the parent, and retries)`
      return { changed, stop: true }
    }
    if (outcome.kind === 'failed') {
      failure = outcome.message
      return { changed, stop: true }
    }
    const answer = outcome.body
    const children: Json[] = (composite ? answer.children : answer.attachments) ?? []
    const wasDeleting = deleting(parent)
    const finalizerHeld = finalizersOf(parent).includes(finalizer)

    let desired: Json[]
    if (composite) {
      if (answer.finalized === true && finalizerHeld) {
        parent = withoutFinalizer(parent, finalizer)
        changed = true
      }
      desired = children.map((child) => asAppliedChild(parent as KubernetesObject, child as KubernetesObject))
      const selector: LabelSelector = model.generateSelector ? { matchLabels: { 'controller-uid': parent.metadata.uid } } : parent.spec?.selector ?? {}
      const stray = desired.find((child) => !selects(selector, child.metadata.labels))
      if (stray !== undefined) {
        throw new SyncFailure(`labels on desired child ${childName(stray as KubernetesObject)} don't match parent selector: Metacontroller's sync fails, and changes no child and no status`)
      }
    } else {
      const update = decoratorParentUpdate(parent, answer, finalizer, finalizerHeld)
      if (update !== undefined) {
        if (!isDeepStrictEqual(update.status, parent.status)) statusWrites++
        parent = update
        changed = true
      }
      desired = children.map((child) => withMetadata(child, { namespace: inNamespaceOf(parent as KubernetesObject, child as KubernetesObject), annotations: { ...child.metadata?.annotations, [DECORATOR_ANNOTATION]: model.name } }))
    }

    // Children are managed while the parent lives, or while it is finalized by this controller (and not by the
    // garbage collector); a composite that just removed its finalizer no longer holds it.
    const gcFinalizer = finalizersOf(parent).some((name) => name === 'foregroundDeletion' || name === 'orphan')
    if (!wasDeleting || (model.finalize && finalizersOf(parent).includes(finalizer) && !gcFinalizer)) {
      changed = manage(observed, desired) || changed
    }

    if (composite) {
      const status = { ...(isObject(answer.status) ? answer.status : {}), observedGeneration: parent.metadata.generation ?? 0 }
      if (!isDeepStrictEqual(parent.status, status)) {
        parent = { ...parent, status }
        changed = true
        statusWrites++
      }
    }
    if (deleting(parent) && finalizersOf(parent).length === 0) {
      plan.deleted = true
      return { changed: true, stop: true }
    }
    return { changed, stop: false }
  }

  /** ManageChildren over the simulated cluster; whether it changed anything. */
  const manage = (observed: Json[], desired: Json[]): boolean => {
    const children = planChildren(byIdentity(observed), desired as KubernetesObject[], (child) => updateMethod(model.children, child))
    plan.errors.push(...children.errors)
    let changed = false
    for (const object of children.delete) {
      world.delete(identity(object))
      deletedOnce.add(identity(object))
      changed = true
    }
    for (const update of children.recreate) {
      world.delete(identity(update.observed))
      deletedOnce.add(identity(update.observed))
      recreated.set(identity(update.observed), update)
      changed = true
    }
    for (const update of children.update) {
      world.set(identity(update.observed), stored(update.observed, update.merged))
      changed = true
    }
    for (const child of children.create) {
      const key = identity(child)
      if (world.has(key) || (input.exists(key) && !deletedOnce.has(key))) {
        plan.errors.push(`${childName(child)} exists and is not this parent's: Metacontroller's create of it fails (AlreadyExists), so it stays as it is`)
        continue
      }
      world.set(key, asCreated(creation(parent, child)))
      changed = true
    }
    left = children.leftAsIs
    waiting = children.waitForDeletion
    return changed
  }

  try {
    for (let round = 1; round <= MAX_SYNCS; round++) {
      plan.syncs = round
      const { changed, stop } = await sync(round)
      if (stop || !changed) break
      if (round === MAX_SYNCS) loops = true
    }
  } catch (error) {
    if (!(error instanceof SyncFailure)) throw error
    plan.errors.push(error.message)
  }

  // A sync that fails on a child fails on it again at each sync.
  plan.errors = [...new Set(plan.errors)]
  plan.metadata = stamped(fieldChanges(metadataShown(first), metadataShown(parent)), now)
  plan.status = stamped(fieldChanges(statusOf(first), statusOf(parent)), now)
  // Metacontroller reads the parent from its cache, which may not hold the status of a sync in between yet: the last
  // sync may see the first status. What the hook answers from it (run only for a hook without I/O, whose answer is
  // all it does) tells which fields may stay as they are.
  if (statusWrites > 1 && last !== undefined && controller.needs.length === 0 && !loops && failure === undefined && refusal === undefined) {
    const key = composite ? 'parent' : 'object'
    const request = { ...last.request, [key]: { ...last.request[key], status: first.status } }
    const alternative = await run(controller, last.hook, request)
    if (alternative.kind === 'answer') {
      const status = composite ? { ...alternative.body.status, observedGeneration: parent.metadata.generation ?? 0 } : alternative.body.status ?? first.status
      const either = new Map(fieldChanges(statusOf(first), statusOf({ status })).map((field) => [field.field, field]))
      plan.status = plan.status.map((field) => isDeepStrictEqual(either.get(field.field)?.to, field.to) ? field : { ...field, mayStay: true })
    }
  }
  plan.objects = objectPlans(world, { initiallyOwned, deletedOnce, recreated, adopted, released, left, waiting, first: new Map(input.candidates.map((object) => [identity(object as KubernetesObject), object])) }, parent, model.children, now)

  const invalid = invalidSpecMessage(parent.status)
  const changes = plan.metadata.length > 0 || plan.status.length > 0 || plan.deleted === true || plan.rows.length > 0 ||
    plan.objects.some((object) => !['unchanged', 'leftAsIs', 'waitForDeletion'].includes(object.action))
  if (failure !== undefined) {
    plan.outcome = 'error'
    plan.message = failure
  } else if (loops) {
    plan.outcome = 'loops'
    plan.message = `still changing something after ${MAX_SYNCS} syncs: Metacontroller would sync it again and again`
  } else if (plan.errors.length > 0) {
    plan.outcome = 'error'
  } else if (refusal !== undefined || invalid !== undefined) {
    plan.outcome = 'refused'
    plan.message = refusal ?? `the hook answers InvalidSpec: ${invalid}`
  } else {
    plan.outcome = changes ? 'changes' : 'unchanged'
  }
  return plan
}

/** A failure of Metacontroller's sync itself, on what the hook answered or on the parent. */
class SyncFailure extends Error {}

function updateMethod (rules: readonly ChildRule[], child: KubernetesObject): 'InPlace' | 'Recreate' | 'OnDelete' {
  const group = (apiVersion: string): string => apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''
  const method = rules.find((rule) => group(rule.apiVersion) === group(child.apiVersion) && rule.kind === child.kind)?.updateStrategy ?? 'OnDelete'
  if (method === 'InPlace' || method === 'RollingInPlace') return 'InPlace'
  if (method === 'Recreate' || method === 'RollingRecreate') return 'Recreate'
  return 'OnDelete'
}

/**
 * The parent as a DecoratorController's sync writes it (decorator/controller.go): the answer's labels and annotations
 * merged in (null removes one), its status in place of the old one unless null, and its finalizer removed when the
 * answer is finalized. Undefined when it writes nothing.
 */
function decoratorParentUpdate (parent: Json, answer: Json, finalizer: string, finalizerHeld: boolean): Json | undefined {
  const merge = (current: Record<string, string> | undefined, changes: Record<string, string | null> | undefined): Record<string, string> => {
    const next = { ...current }
    for (const [key, value] of Object.entries(changes ?? {})) {
      if (value === null) delete next[key]
      else next[key] = value
    }
    return next
  }
  const labels = merge(parent.metadata.labels, answer.labels)
  const annotations = merge(parent.metadata.annotations, answer.annotations)
  const status = answer.status === null || answer.status === undefined ? parent.status : answer.status
  const finalized = answer.finalized === true && finalizerHeld
  const same = (a: Record<string, string>, b: Record<string, string> | undefined): boolean => isDeepStrictEqual(a, b ?? {})
  if (same(labels, parent.metadata.labels) && same(annotations, parent.metadata.annotations) && isDeepStrictEqual(status ?? {}, parent.status ?? {}) && !finalized) return undefined
  let updated = withMetadata(parent, {
    ...(Object.keys(labels).length === 0 && parent.metadata.labels === undefined ? {} : { labels }),
    ...(Object.keys(annotations).length === 0 && parent.metadata.annotations === undefined ? {} : { annotations })
  })
  if (status !== undefined) updated = { ...updated, status }
  return finalized ? withoutFinalizer(updated, finalizer) : updated
}

interface History {
  first: Map<string, Json>
  initiallyOwned: Set<string>
  deletedOnce: Set<string>
  recreated: Map<string, ChildUpdate>
  adopted: Set<string>
  released: Set<string>
  left: ChildUpdate[]
  waiting: ChildUpdate[]
}

/** What happens to each child, from the first sync to the last: by comparing the cluster before and after. */
function objectPlans (world: Map<string, Json>, history: History, parent: Json, rules: readonly ChildRule[], now: string): ObjectPlan[] {
  const plans: ObjectPlan[] = []
  const uid = parent.metadata.uid
  const ownedAtEnd = new Set([...world].filter(([, object]) => controllerUidOf(object) === uid).map(([key]) => key))
  const keys = [...new Set([...history.initiallyOwned, ...ownedAtEnd, ...history.released, ...history.deletedOnce])]
  const leftByKey = new Map([...history.left, ...history.waiting].map((update) => [identity(update.observed), update]))
  const strategy = (object: Json): string => updateMethod(rules, object as KubernetesObject)
  for (const key of keys) {
    const before = history.first.get(key)
    const after = world.get(key)
    const ref = refOf(after ?? before ?? {})
    const wasOwned = history.initiallyOwned.has(key) && !history.adopted.has(key)
    if (history.released.has(key)) {
      plans.push({ object: ref, action: 'release', fields: fieldChanges(before, after) })
    } else if (after === undefined) {
      plans.push({ object: ref, action: 'delete' })
    } else if (before === undefined) {
      plans.push({ object: ref, action: 'create', manifest: withoutSimulatedState(after) })
    } else if (history.deletedOnce.has(key)) {
      const update = history.recreated.get(key)
      plans.push({ object: ref, action: 'recreate', strategy: strategy(after), fields: stamped(update?.fields ?? [], now), manifest: withoutSimulatedState(after) })
    } else {
      const fields = stamped(fieldChanges(before, after), now)
      const pending = leftByKey.get(key)
      if (!wasOwned) plans.push({ object: ref, action: 'adopt', fields })
      else if (fields.length > 0) plans.push({ object: ref, action: 'update', strategy: strategy(after), fields })
      else if (pending !== undefined) plans.push({ object: ref, action: deleting(after) ? 'waitForDeletion' : 'leftAsIs', strategy: pending.strategy ?? 'OnDelete', fields: stamped(pending.fields, now) })
      else plans.push({ object: ref, action: 'unchanged' })
    }
  }
  const order: ObjectAction[] = ['delete', 'recreate', 'create', 'update', 'adopt', 'release', 'leftAsIs', 'waitForDeletion', 'unchanged']
  return plans.sort((a, b) => order.indexOf(a.action) - order.indexOf(b.action) || describe(a.object).localeCompare(describe(b.object)))
}

/** A created object as Metacontroller sends it, without the API server's part that the simulation added. */
function withoutSimulatedState (object: Json): Json {
  const { status: _, ...rest } = object
  const { generation: _g, ...metadata } = rest.metadata
  return { ...rest, metadata }
}

export function describe (ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace === undefined ? '' : `${ref.namespace}/`}${ref.name}`
}
