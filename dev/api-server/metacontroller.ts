import type { Controller } from '../../hooks/framework/controller.js'
import { groupKey } from '../../hooks/framework/wire/objects.js'
import type { CompositeRequest, CompositeResponse, KubernetesObject, ObjectMap } from '../../hooks/framework/wire/schemas.js'
import { metacontrollerManifest } from '../manifests.js'
import { appliedChildren, withSortedKeys, type ApplyState } from './apply.js'
import { sortedKeys, uidFor } from './encoding.js'

/** The controller object Metacontroller sends in every request, its sync requests, and what a sync it applied leads to. */

export { LAST_APPLIED_ANNOTATION as LAST_APPLIED } from '../../hooks/framework/wire/apply.js'

/** The CompositeController or DecoratorController of `controller` as the API server holds it. */
export function controllerObject (controller: Parameters<typeof metacontrollerManifest>[0]): Record<string, unknown> {
  const manifest = metacontrollerManifest(controller) as { kind: string, metadata: { name: string } }
  return {
    ...manifest,
    metadata: { ...manifest.metadata, uid: uidFor(`uid:${manifest.kind.toLowerCase()}/${manifest.metadata.name}`), generation: 1, resourceVersion: '1207', creationTimestamp: '2026-11-22T10:00:00Z' },
    status: {}
  }
}

/** A sync request as Metacontroller v2 sends it: the controller object, and a group for every child kind (empty ones too), keys as Go writes them. */
export function syncRequest (controller: Extract<Controller, { type: 'composite' }>, parent: KubernetesObject, children: ObjectMap = {}): CompositeRequest {
  const groups: ObjectMap = Object.fromEntries(controller.childResources.map(({ kind, apiVersion }) => [groupKey(kind, apiVersion), {}]))
  return { controller: controllerObject(controller), parent: sortedKeys(parent), children: withSortedKeys({ ...groups, ...children }), related: {}, finalizing: false }
}

/**
 * The next sync request once Metacontroller has applied `answer` to `request`: the children as the cluster then holds
 * them (`stateOf` gives what differs per child, such as ready replicas), and the status as Metacontroller writes it,
 * with the parent's generation as observedGeneration.
 */
export function afterSync (request: CompositeRequest, answer: CompositeResponse, state: ApplyState, stateOf?: (child: KubernetesObject) => Partial<ApplyState>): CompositeRequest {
  const { parent } = request
  const children = appliedChildren(parent, answer.children, request.children, state, stateOf)
  const status = { ...answer.status, observedGeneration: parent.metadata.generation }
  return { ...request, parent: sortedKeys({ ...parent, status }), children: withSortedKeys(children) }
}
