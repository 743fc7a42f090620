import type { Controller } from '../../hooks/framework/controller.js'
import { KubeApiError, type Json, type KubeApi, type ResourceInfo } from './kube-api.js'
import type { AnnotationSelector, LabelSelector } from './selectors.js'
import { isObject } from '../../hooks/framework/wire/objects.js'

/**
 * A controller's CompositeController or DecoratorController as the cluster holds it: Metacontroller acts on that
 * object, not on this checkout's manifests, so the plan takes from it which parents are selected, which child kinds
 * are observed, each one's update strategy, the hooks' version and whether there is a finalize hook.
 */

export type UpdateMethod = 'OnDelete' | 'Recreate' | 'InPlace' | 'RollingRecreate' | 'RollingInPlace'

export interface ParentRule {
  apiVersion: string
  resource: string
  kind: string
  namespaced: boolean
  labelSelector: LabelSelector | undefined
  annotationSelector: AnnotationSelector | undefined
}

export interface ChildRule {
  apiVersion: string
  resource: string
  kind: string
  namespaced: boolean
  updateStrategy: UpdateMethod
}

export interface ControllerObject {
  type: Controller['type']
  name: string
  /** The object as read: what Metacontroller sends as a request's `controller`. */
  object: Json
  /** The sync hook's version, which sets the keys of the request's child maps. */
  hookVersion: 'v1' | 'v2'
  finalize: boolean
  customize: boolean
  /** A CompositeController's spec.generateSelector. */
  generateSelector: boolean
  /** A CompositeController's parentResource, or a DecoratorController's resources. */
  parents: ParentRule[]
  /** A CompositeController's childResources, or a DecoratorController's attachments. */
  children: ChildRule[]
}

const METACONTROLLER_API = 'metacontroller.k8s.io/v1alpha1'

function controllerResource (controller: Pick<Controller, 'type'>): string {
  return controller.type === 'composite' ? 'compositecontrollers' : 'decoratorcontrollers'
}

export function controllerKind (controller: Pick<Controller, 'type'>): string {
  return controller.type === 'composite' ? 'CompositeController' : 'DecoratorController'
}

/** The finalizer Metacontroller puts on each parent of a controller with a finalize hook. */
export function finalizerName (controller: Pick<ControllerObject, 'type' | 'name'>): string {
  return `metacontroller.io/${controller.type === 'composite' ? 'compositecontroller' : 'decoratorcontroller'}-${controller.name}`
}

/** The object of `controller` in the cluster, with its rules' kinds from discovery; undefined when it is not installed. */
export async function readControllerObject (api: KubeApi, controller: Controller): Promise<ControllerObject | undefined> {
  let object: Json
  try {
    object = await api.get(`/apis/${METACONTROLLER_API}/${controllerResource(controller)}/${controller.name}`)
  } catch (error) {
    if (error instanceof KubeApiError && error.statusCode === 404) return undefined
    throw error
  }
  const resources = new Map<string, ResourceInfo>()
  for (const rule of [...parentRules(controller, object), ...childRules(controller, object)]) {
    resources.set(`${String(rule.apiVersion)} ${String(rule.resource)}`, await api.resource(String(rule.apiVersion), String(rule.resource)))
  }
  return controllerModel(controller, object, (apiVersion, plural) => resources.get(`${apiVersion} ${plural}`) as ResourceInfo)
}

function specOf (object: Json): Json {
  return isObject(object.spec) ? object.spec : {}
}

function parentRules (controller: Pick<Controller, 'type'>, object: Json): Json[] {
  const spec = specOf(object)
  return controller.type === 'composite' ? [spec.parentResource ?? {}] : spec.resources ?? []
}

function childRules (controller: Pick<Controller, 'type'>, object: Json): Json[] {
  const spec = specOf(object)
  return (controller.type === 'composite' ? spec.childResources : spec.attachments) ?? []
}

/** The controller object as the plan follows it, the kind of each resource it names given by `resource` (discovery). */
export function controllerModel (controller: Pick<Controller, 'type' | 'name'>, object: Json, resource: (apiVersion: string, plural: string) => ResourceInfo): ControllerObject {
  const spec = specOf(object)
  const hooks: Json = isObject(spec.hooks) ? spec.hooks : {}
  return {
    type: controller.type,
    name: controller.name,
    object,
    hookVersion: hooks.sync?.version === 'v2' ? 'v2' : 'v1',
    finalize: isObject(hooks.finalize),
    customize: isObject(hooks.customize),
    generateSelector: spec.generateSelector === true,
    parents: parentRules(controller, object).map((rule) => ({
      apiVersion: String(rule.apiVersion),
      resource: String(rule.resource),
      ...resource(String(rule.apiVersion), String(rule.resource)),
      labelSelector: rule.labelSelector ?? undefined,
      annotationSelector: rule.annotationSelector ?? undefined
    })),
    children: childRules(controller, object).map((rule) => ({
      apiVersion: String(rule.apiVersion),
      resource: String(rule.resource),
      ...resource(String(rule.apiVersion), String(rule.resource)),
      updateStrategy: rule.updateStrategy?.method ?? 'OnDelete'
    }))
  }
}
