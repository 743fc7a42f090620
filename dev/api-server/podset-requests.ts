import { hookContext } from '../../hooks/framework/controller.js'
import { podSet } from '../../hooks/podset/index.js'
import { syncPodSet } from '../../hooks/podset/sync.js'
import type { CompositeRequest, KubernetesObject } from '../../hooks/framework/wire/schemas.js'
import { appliedChild, type PodPhase } from './apply.js'
import { customResource } from './custom-resource.js'
import { addSeconds, digest, uidFor } from './encoding.js'
import { controllerObject } from './metacontroller.js'

/**
 * Realistic PodSet hook requests, for tests and the benchmark: a parent as `kubectl apply` made it and pods as the
 * hook applied them, through the API-server simulation. Ids and resourceVersions are derived from names, so the
 * same call always gives the same bytes.
 */

const CREATED = '2026-11-22T10:10:00Z'

function resourceVersionOf (text: string): string {
  return String(3000 + Number.parseInt(digest(`rv:${text}`).slice(0, 6), 16) % 7000)
}

export interface AppliedPodOptions {
  /** Default `Running`. */
  phase?: PodPhase
  /** When Metacontroller created the pod; default 2026-11-22T10:10:01Z. */
  createdAt?: string
  /** Marks the pod as being deleted (graceful, 30 s). */
  deletionTimestamp?: string
}

/** `desired` (a pod the hook answered) once Metacontroller created it for `parent` and the kubelet ran it. */
export function appliedPod (parent: KubernetesObject, desired: KubernetesObject, options: AppliedPodOptions = {}): KubernetesObject {
  const { phase = 'Running', createdAt = '2026-11-22T10:10:01Z', deletionTimestamp } = options
  const id = `${desired.metadata.namespace ?? parent.metadata.namespace ?? 'default'}/${String(desired.metadata.name)}`
  return appliedChild(parent, desired, undefined, {
    time: createdAt,
    uid: uidFor(`uid:${id}/${createdAt}`),
    resourceVersion: resourceVersionOf(`${id}/${phase}/${deletionTimestamp ?? ''}`),
    phase,
    deletionTimestamp
  })
}

export interface PodSetParentOptions {
  /** Default `sleepers`. */
  name?: string
  /** Default `default`. */
  namespace?: string
  /** The spec as the API server returns it (the CRD's defaults applied). */
  spec: unknown
  /** The spec as written by `kubectl apply`; default `spec`. */
  appliedSpec?: unknown
  labels?: Record<string, string>
  /** Default 1. */
  generation?: number
  /** The status as last written; absent on a parent no hook has answered yet. */
  status?: unknown
  deletionTimestamp?: string
}

/** A PodSet as the API server returns it, created with `kubectl apply`. */
export function podSetParent (options: PodSetParentOptions): KubernetesObject {
  const { name = 'sleepers', namespace = 'default', generation = 1, status, deletionTimestamp } = options
  const { group, version, kind } = podSet.resource
  return customResource({
    ...options,
    apiVersion: `${group}/${version}`,
    kind,
    name,
    namespace,
    uid: uidFor(`uid:${namespace}/${name}`),
    resourceVersion: resourceVersionOf(`${namespace}/${name}/${generation}/${JSON.stringify(status)}/${deletionTimestamp ?? ''}`),
    createdAt: CREATED,
    statusWrittenAt: addSeconds(CREATED, 5)
  })
}

/** The `Pod.v1` group of a request's children, keyed `namespace/name`. */
export function podGroup (pods: readonly KubernetesObject[]): Record<string, KubernetesObject> {
  return Object.fromEntries(pods.map((pod) => [`${pod.metadata.namespace}/${pod.metadata.name}`, pod]))
}

/** A sync request as Metacontroller v2 sends it. */
export function syncRequest (parent: KubernetesObject, pods: readonly KubernetesObject[]): CompositeRequest {
  return { controller: controllerObject(podSet), parent, children: { 'Pod.v1': podGroup(pods) }, related: {}, finalizing: false }
}

/**
 * A PodSet of `replicas` whose pods 0 .. observed-1 run as the hook applied them, with the status the hook wrote for
 * them: a steady-state resync when `observed` equals `replicas` (the default), a scale up or down otherwise.
 */
export function podSetRequest ({ replicas, observed = replicas, phase = 'Running' }: { replicas: number, observed?: number, phase?: PodPhase }): CompositeRequest {
  const spec = { replicas, image: 'busybox:1.36', command: ['sleep', '3600'] }
  const before = podSetParent({ spec: { ...spec, replicas: observed } })
  const pods = syncPodSet(syncRequest(before, []), hookContext(podSet, before, CREATED, {})).children.map((pod) => appliedPod(before, pod, { phase }))
  const { status } = syncPodSet(syncRequest(before, pods), hookContext(podSet, before, '2026-11-22T10:10:05Z', {}))
  return syncRequest(podSetParent({ spec, status, generation: observed === replicas ? 1 : 2 }), pods)
}
