import type { Controller } from '../../hooks/framework/controller.js'
import type { KubernetesObject } from '../../hooks/framework/wire/schemas.js'
import { identity } from '../metacontroller-apply.js'
import { controllerKind, type ControllerObject } from './controller-objects.js'
import type { HookRunner } from './hook-runner.js'
import type { Json } from './kube-api.js'
import { DECORATOR_ANNOTATION, planParent, type ParentPlan } from './parent-plan.js'

/**
 * The plan of one controller: each parent Metacontroller would act on, planned with the children it controls or
 * could adopt, and a summary. Children are indexed once per controller (by controller and by namespace), so that
 * each parent costs what its own children cost.
 */

/** What the plan read for a controller: its object in the cluster (undefined: not installed), its parents and the objects of its child kinds. */
export interface ControllerRead {
  controller: Controller
  model: ControllerObject | undefined
  parents: Json[]
  children: Json[]
}

export interface Summary {
  /** Parents Metacontroller acts on. */
  parents: number
  /** Those parents and their children. */
  read: number
  unchanged: number
  /** Objects read that would change: a parent's status or metadata, a child updated, deleted, recreated, adopted or released. */
  change: number
  /** Children that would be created. */
  create: number
  /** Parents the new code refuses (InvalidSpec or an error status), fails on, or loops on. */
  refused: number
  /** PostgreSQL statements that would write. */
  rows: number
}

export interface ControllerPlan {
  controller: string
  kind: string
  /** Why it is not planned: not installed, or a feature the plan cannot follow. */
  skipped?: string
  summary: Summary
  parents: ParentPlan[]
}

export interface PlanContext {
  now: string
  run: HookRunner
  /** Called after each parent: how many are planned, of how many. */
  progress?: (done: number, total: number) => void
}

const EMPTY: Summary = { parents: 0, read: 0, unchanged: 0, change: 0, create: 0, refused: 0, rows: 0 }

function controllerUidOf (object: Json): string | undefined {
  const refs: Json[] = Array.isArray(object.metadata?.ownerReferences) ? object.metadata.ownerReferences : []
  return refs.find((ref) => ref.controller === true)?.uid
}

/** What the plan cannot follow of a controller object, if anything. */
function unsupported (model: ControllerObject): string | undefined {
  if (model.customize) return `${controllerKind(model)} ${model.name} has a customize hook: the related objects it selects are not read, so it is not planned`
  const rolling = model.children.filter((child) => child.updateStrategy.startsWith('Rolling'))
  if (rolling.length > 0) return `${controllerKind(model)} ${model.name} updates ${rolling.map((child) => child.resource).join(', ')} with ${rolling[0]?.updateStrategy}, for which Metacontroller calls the hook once per revision: not planned`
  return undefined
}

/** The plan of a controller that is not planned, and why. */
export function skippedPlan (controller: Pick<Controller, 'name' | 'type'>, why: string): ControllerPlan {
  return { controller: controller.name, kind: controllerKind(controller), skipped: why, summary: { ...EMPTY }, parents: [] }
}

/** The parents Metacontroller would look at: those its selector matches, and those that still carry its finalizer. */
export async function planController (read: ControllerRead, context: PlanContext): Promise<ControllerPlan> {
  const { controller, model } = read
  if (model === undefined) return skippedPlan(controller, `${controllerKind(controller)} ${controller.name} is not installed in this cluster: nothing to plan (the release's manifests install it)`)
  const why = unsupported(model)
  if (why !== undefined) return skippedPlan(controller, why)
  const plan: ControllerPlan = { controller: controller.name, kind: controllerKind(controller), summary: { ...EMPTY }, parents: [] }

  const owned = new Map<string, Json[]>()
  const orphans = new Map<string, Json[]>()
  const all = new Set<string>()
  for (const object of read.children) {
    all.add(identity(object as KubernetesObject))
    const owner = controllerUidOf(object)
    const index = owner === undefined ? orphans : owned
    const key = owner ?? String(object.metadata?.namespace ?? '')
    let list = index.get(key)
    if (list === undefined) index.set(key, list = [])
    list.push(object)
  }
  const exists = (key: string): boolean => all.has(key)

  let done = 0
  for (const parent of read.parents) {
    const uid = String(parent.metadata?.uid)
    const namespace = parent.metadata?.namespace as string | undefined
    const namespaced = namespace !== undefined && namespace !== ''
    const inScope = (object: Json): boolean => !namespaced || object.metadata?.namespace === namespace
    const own = (owned.get(uid) ?? []).filter(inScope)
    // An orphan is adopted only by a composite whose selector matches it: with the generated selector, its controller-uid label.
    const adoptable = model.type === 'decorator'
      ? []
      : (namespaced ? orphans.get(namespace) ?? [] : [...orphans.values()].flat())
          .filter((object) => !model.generateSelector || object.metadata?.labels?.['controller-uid'] === uid)
    const candidates = model.type === 'decorator' ? own.filter((object) => object.metadata?.annotations?.[DECORATOR_ANNOTATION] === model.name) : [...own, ...adoptable]
    const planned = await planParent({ model, controller, parent, candidates, exists, now: context.now, run: context.run })
    context.progress?.(++done, read.parents.length)
    if (planned.outcome === 'ignored') continue
    plan.parents.push(planned)
    count(plan.summary, planned)
  }
  return plan
}

function count (summary: Summary, parent: ParentPlan): void {
  summary.parents++
  const parentChanges = parent.metadata.length > 0 || parent.status.length > 0 || parent.deleted === true
  summary.read++
  if (parentChanges) summary.change++
  else summary.unchanged++
  for (const object of parent.objects) {
    if (object.action === 'create') {
      summary.create++
      continue
    }
    summary.read++
    if (['unchanged', 'leftAsIs', 'waitForDeletion'].includes(object.action)) summary.unchanged++
    else summary.change++
  }
  if (['refused', 'error', 'loops'].includes(parent.outcome)) summary.refused++
  summary.rows += parent.rows.filter((effect) => ['insert', 'update', 'delete'].includes(effect.action)).length
}

/** The summary of several controllers' plans. */
export function total (plans: readonly ControllerPlan[]): Summary {
  const sum = { ...EMPTY }
  for (const { summary } of plans) for (const key of Object.keys(sum) as Array<keyof Summary>) sum[key] += summary[key]
  return sum
}
