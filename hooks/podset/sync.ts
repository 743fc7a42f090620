import type { Pod } from 'kubernetes-types/core/v1.js'
import { observedByName, parentStatus, recommendedLabels, type CompositeRequest, type CompositeResponse, type HookContext, type KubernetesObject, type ParentOf, type Readiness } from '../framework/index.js'
import type { podSetResource, PodSetSpec, PodSetStatus } from './resource.js'

/** The pure core of PodSet: the desired pods of a parent and the status they give it. */

export type PodChild = Pod & KubernetesObject & { apiVersion: 'v1', kind: 'Pod', metadata: { name: string } }

/** Phases a pod never leaves: it is left out of one answer (so Metacontroller deletes it) and created anew after. */
const TERMINAL_PHASES: ReadonlySet<unknown> = new Set(['Succeeded', 'Failed'])
/** What the original operator counted as ready: really "available", Pending included. */
const COUNTED_PHASES: ReadonlySet<unknown> = new Set(['Running', 'Pending'])
const LISTED_MISSING_PODS = 5

export function podName (parentName: string, ordinal: number): string {
  return `${parentName}-pod-${ordinal}`
}

export function desiredPod (parent: { name: string, namespace?: string | undefined }, spec: PodSetSpec, ordinal: number): PodChild {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(parent.name, ordinal),
      ...(parent.namespace === undefined ? {} : { namespace: parent.namespace }),
      labels: { app: parent.name, version: 'v0.1', ...recommendedLabels('podset', parent.name, 'pod') }
    },
    spec: {
      containers: [{ name: 'busybox', image: spec.image, command: [...spec.command] }]
    }
  }
}

function missingPods (names: string[]): string {
  const listed = names.slice(0, LISTED_MISSING_PODS).join(', ')
  return names.length > LISTED_MISSING_PODS ? `${listed} and ${names.length - LISTED_MISSING_PODS} more` : listed
}

/**
 * What a PodSet's answer may take: its pods, each as large as the last (the longest name), and their names in its
 * status, as JSON.stringify writes them. Counted from the lengths of the strings a pod is made of, on a pod whose
 * strings are empty, as JSON writes each of them as it is (names are DNS names, and the spec's image and arguments are
 * in characters it writes alone, resource.ts): building and writing the last pod took 18 times as long.
 */
export function podSetAnswerBytes (parent: ParentOf<typeof podSetResource>): number {
  const spec = parent.spec()
  if (spec.replicas === 0) return 0
  const name = podName(parent.name, spec.replicas - 1)
  const strings = name.length + LABEL_NAME_USES * parent.name.length + (parent.namespace?.length ?? 0) + spec.image.length +
    spec.command.reduce((sum, argument) => sum + argument.length + 2, Math.max(0, spec.command.length - 1))
  const podBytes = (parent.namespace === undefined ? EMPTY_POD_BYTES : EMPTY_NAMESPACED_POD_BYTES) + strings
  return spec.replicas * (podBytes + name.length + 3)
}

/** Besides the pod's name, the parent's name is written in its labels `app` and `app.kubernetes.io/instance`. */
const LABEL_NAME_USES = 2
/** A pod whose strings are empty, written, without its name: without and with a namespace. */
const emptyPodBytes = (namespace?: string): number => JSON.stringify(desiredPod({ name: '', namespace }, { replicas: 1, image: '', command: [] }, 0)).length - podName('', 0).length
const EMPTY_POD_BYTES = emptyPodBytes()
const EMPTY_NAMESPACED_POD_BYTES = emptyPodBytes('')

export function syncPodSet (request: CompositeRequest, { parent, now }: HookContext<typeof podSetResource>): CompositeResponse {
  const spec = parent.spec()
  const observed = observedByName<Pod>(request.children, 'Pod', 'v1')

  const children: PodChild[] = []
  const available: string[] = []
  const missing: string[] = []
  // Observed pods at or above spec.replicas are removed by this very answer, so they are neither desired nor counted.
  for (let ordinal = 0; ordinal < spec.replicas; ordinal++) {
    const pod = desiredPod(parent, spec, ordinal)
    const current = observed.get(pod.metadata.name)
    if (current === undefined || !TERMINAL_PHASES.has(current.status?.phase)) children.push(pod)
    if (current !== undefined && current.metadata.deletionTimestamp === undefined && COUNTED_PHASES.has(current.status?.phase)) {
      available.push(pod.metadata.name)
    } else {
      missing.push(pod.metadata.name)
    }
  }

  const counts = `${available.length}/${spec.replicas} pods are running or pending`
  const readiness: Readiness = parent.deleting
    ? { ready: false, reason: 'Deleting', message: `the PodSet is being deleted, and its pods with it; ${counts}` }
    : missing.length === 0
      ? { ready: true, reason: 'PodsAvailable', message: counts }
      : { ready: false, reason: 'PodsUnavailable', message: `${counts}; waiting for ${missingPods(missing)}` }
  const status: PodSetStatus = parentStatus(parent, now, { readyReplicas: available.length, podNames: available }, readiness)
  return { status, children }
}
