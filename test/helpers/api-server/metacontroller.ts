import type { KubernetesObject } from '../../../hooks/wire/schemas.js'
import { metacontrollerManifest } from '../../../scripts/manifests.js'
import { uidFor } from './encoding.js'

/** What Metacontroller adds to a desired child before it applies it, and the controller object it sends in every request. */

export { LAST_APPLIED_ANNOTATION as LAST_APPLIED } from '../../../hooks/wire/last-applied.js'

/** The desired child as Metacontroller sends it to the API server: in the parent's namespace, with its selector label. */
export function asApplied (parent: KubernetesObject, desired: KubernetesObject): KubernetesObject {
  const namespace = desired.metadata.namespace ?? parent.metadata.namespace ?? 'default'
  return { ...desired, metadata: { ...desired.metadata, namespace, labels: { ...desired.metadata.labels, 'controller-uid': String(parent.metadata.uid) } } }
}

export function ownerReferenceTo (parent: KubernetesObject): Record<string, unknown> {
  return { apiVersion: parent.apiVersion, kind: parent.kind, name: String(parent.metadata.name), uid: String(parent.metadata.uid), controller: true, blockOwnerDeletion: true }
}

/** The CompositeController or DecoratorController of `controller` as the API server holds it. */
export function controllerObject (controller: Parameters<typeof metacontrollerManifest>[0]): Record<string, unknown> {
  const manifest = metacontrollerManifest(controller) as { kind: string, metadata: { name: string } }
  return {
    ...manifest,
    metadata: { ...manifest.metadata, uid: uidFor(`uid:${manifest.kind.toLowerCase()}/${manifest.metadata.name}`), generation: 1, resourceVersion: '1207', creationTimestamp: '2026-11-22T10:00:00Z' },
    status: {}
  }
}
