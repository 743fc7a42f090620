import type { Controller } from '../../hooks/framework/controller.js'
import { controllerKind, type ControllerObject } from './controller-objects.js'
import type { HookRunner } from './hook-runner.js'
import type { ChildSpool } from './child-spool.js'
import type { Json } from './kube-api.js'
import { DECORATOR_ANNOTATION, planParent, type ParentPlan } from './parent-plan.js'

/**
 * The plan of one controller: each parent Metacontroller would act on, planned with the children it controls or
 * could adopt, and a summary. Parents come a page at a time, and each parent's children are read back from the
 * spool of its child kinds when it is planned; each parent's plan is handed on as it is made and only the summary is
 * kept, so that a controller of any number of parents holds one page of parents and one parent's children at a time.
 */

/** What the plan reads for a controller: its object in the cluster (undefined: not installed), its parents a page at a time, and the objects of its child kinds. */
export interface ControllerRead {
  controller: Controller
  model: ControllerObject | undefined
  pages: AsyncIterable<Json[]> | Iterable<Json[]>
  children: ChildSpool
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

/** A controller's plan as the JSON report has it. */
export interface ControllerPlan {
  controller: string
  kind: string
  /** Why it is not planned (or not whole): not installed, or a feature the plan cannot follow. */
  skipped?: string
  summary: Summary
  parents: ParentPlan[]
}

/** What the plan keeps of a controller once its parents are handed on. */
export type ControllerTotals = Omit<ControllerPlan, 'parents'>

export interface PlanContext {
  now: string
  run: HookRunner
  /** Each parent's plan, as it is made; parents Metacontroller ignores are not handed on. */
  parent?: (plan: ParentPlan) => Promise<void> | void
  /** Called before a page of parents is planned; a reason returned stops the controller's plan there. */
  beforePage?: (parents: readonly Json[]) => Promise<string | undefined>
  /** Called after each parent: how many are planned so far. */
  progress?: (done: number) => void
  /** What reading the parents or their children threw. */
  failed: (error: Error) => void
}

const EMPTY: Summary = { parents: 0, read: 0, unchanged: 0, change: 0, create: 0, refused: 0, rows: 0 }

/** What the plan cannot follow of a controller object, if anything. */
function unsupported (model: ControllerObject): string | undefined {
  if (model.customize) return `${controllerKind(model)} ${model.name} has a customize hook: the related objects it selects are not read, so it is not planned`
  const rolling = model.children.filter((child) => child.updateStrategy.startsWith('Rolling'))
  if (rolling.length > 0) return `${controllerKind(model)} ${model.name} updates ${rolling.map((child) => child.resource).join(', ')} with ${rolling[0]?.updateStrategy}, for which Metacontroller calls the hook once per revision: not planned`
  return undefined
}

/** The plan of a controller that is not planned, and why. */
export function skippedPlan (controller: Pick<Controller, 'name' | 'type'>, why: string): ControllerTotals {
  return { controller: controller.name, kind: controllerKind(controller), skipped: why, summary: { ...EMPTY } }
}

/**
 * The parents Metacontroller would look at: those its selector matches, and those that still carry its finalizer.
 * What reading a page throws ends the plan of the controller there, and goes to `failed`: the parents before it are
 * planned and counted.
 */
export async function planController (read: ControllerRead, context: PlanContext): Promise<ControllerTotals> {
  const { controller, model } = read
  if (model === undefined) return skippedPlan(controller, `${controllerKind(controller)} ${controller.name} is not installed in this cluster: nothing to plan (the release's manifests install it)`)
  const why = unsupported(model)
  if (why !== undefined) return skippedPlan(controller, why)
  const plan: ControllerTotals = { controller: controller.name, kind: controllerKind(controller), summary: { ...EMPTY } }
  let done = 0
  try {
    for await (const parents of read.pages) {
      const stop = parents.length === 0 ? undefined : await context.beforePage?.(parents)
      if (stop !== undefined) {
        plan.skipped = stop
        break
      }
      for (const parent of parents) {
        const planned = await planParent({ model, controller, parent, candidates: candidatesOf(read.children, model, parent), exists: (key) => read.children.exists(key), now: context.now, run: context.run })
        context.progress?.(++done)
        if (planned.outcome === 'ignored') continue
        count(plan.summary, planned)
        await context.parent?.(planned)
      }
    }
  } catch (error) {
    context.failed(error as Error)
  }
  return plan
}

/** The objects of the child kinds that `parent` controls, or could adopt. */
function candidatesOf (children: ChildSpool, model: ControllerObject, parent: Json): Json[] {
  const uid = String(parent.metadata?.uid)
  const namespace = parent.metadata?.namespace as string | undefined
  const namespaced = namespace !== undefined && namespace !== ''
  const own = children.controlledBy(uid).filter((object) => !namespaced || object.metadata?.namespace === namespace)
  if (model.type === 'decorator') return own.filter((object) => object.metadata?.annotations?.[DECORATOR_ANNOTATION] === model.name)
  // An orphan is adopted only by a composite whose selector matches it: with the generated selector, its controller-uid label.
  const adoptable = children.orphans(namespaced ? namespace : undefined)
    .filter((object) => !model.generateSelector || object.metadata?.labels?.['controller-uid'] === uid)
  return [...own, ...adoptable]
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
export function total (plans: ReadonlyArray<Pick<ControllerPlan, 'summary'>>): Summary {
  const sum = { ...EMPTY }
  for (const { summary } of plans) for (const key of Object.keys(sum) as Array<keyof Summary>) sum[key] += summary[key]
  return sum
}
