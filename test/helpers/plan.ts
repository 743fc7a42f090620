import type { Controller } from '../../hooks/framework/controller.js'
import { controllerObject } from '../../dev/api-server/metacontroller.js'
import { controllerModel, type ControllerObject } from '../../dev/plan/controller-objects.js'
import { hookRunner, type HookRunner } from '../../dev/plan/hook-runner.js'
import type { Json } from '../../dev/plan/kube-api.js'
import { planParent, type ParentPlan } from '../../dev/plan/parent-plan.js'
import type { KubernetesObject } from '../../hooks/framework/wire/schemas.js'
import { identity } from '../../dev/metacontroller-apply.js'
import { kubernetesTime } from '../../hooks/framework/wire/conditions.js'
import { NOW } from './app.js'

/** The plan's tests: a controller's object as the generated manifests install it, and one parent planned with it. */

export const PLANNED_AT = kubernetesTime(NOW)

/** This checkout's hooks as the plan runs them, stamped at PLANNED_AT: one runner, whose apps the plan's tests share. */
export const planRunner: HookRunner = hookRunner({ now: PLANNED_AT })

/** The CompositeController or DecoratorController of `controller` as the cluster holds it, with `spec` merged over its spec. */
export function modelOf (controller: Controller, spec: Json = {}): ControllerObject {
  const object = controllerObject(controller) as Json
  const kinds = new Map<string, string>([[`${controller.resource.apiVersion} ${controller.resource.plural}`, controller.resource.kind]])
  if (controller.type === 'composite') for (const child of controller.childResources) kinds.set(`${child.apiVersion} ${child.resource}`, child.kind)
  return controllerModel(controller, { ...object, spec: { ...object.spec, ...spec } }, (apiVersion, plural) => {
    const kind = kinds.get(`${apiVersion} ${plural}`)
    if (kind === undefined) throw new Error(`no kind known for ${apiVersion} ${plural}`)
    return { kind, namespaced: true }
  })
}

export interface PlanOneOptions {
  model?: ControllerObject
  /** Objects that exist besides the candidates (by identity), whoever controls them. */
  others?: Json[]
  run?: HookRunner
}

/** One parent planned with this checkout's hooks, no PostgreSQL, stamped at PLANNED_AT. */
export async function planOne (controller: Controller, parent: Json, candidates: Json[], options: PlanOneOptions = {}): Promise<ParentPlan> {
  const existing = new Set([...candidates, ...options.others ?? []].map((object) => identity(object as KubernetesObject)))
  return await planParent({
    model: options.model ?? modelOf(controller),
    controller,
    parent,
    candidates,
    exists: (key) => existing.has(key),
    now: PLANNED_AT,
    run: options.run ?? planRunner
  })
}

/** The children of a fixture request, in one list. */
export function childrenOf (request: Json): Json[] {
  return Object.values((request.children ?? request.attachments) as Record<string, Record<string, Json>>).flatMap((group) => Object.values(group))
}
