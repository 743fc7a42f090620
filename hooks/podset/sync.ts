import type { Pod } from 'kubernetes-types/core/v1.js'
import { HookError } from '../errors.js'
import { specParser } from '../spec.js'
import { observedConditions, readyCondition } from '../wire/conditions.js'
import { observedByName, recommendedLabels } from '../wire/objects.js'
import type { CompositeRequest, CompositeResponse, KubernetesObject } from '../wire/schemas.js'
import { PodSetSpecSchema, podSetResource, type PodSetSpec, type PodSetStatus } from './resource.js'

/** The pure core of PodSet: the desired pods of a parent and the status they give it. */

export type PodChild = Pod & KubernetesObject & { apiVersion: 'v1', kind: 'Pod', metadata: { name: string } }

/** Phases a pod never leaves: it is left out of one answer (so Metacontroller deletes it) and created anew after. */
const TERMINAL_PHASES: ReadonlySet<unknown> = new Set(['Succeeded', 'Failed'])
/** What the original operator counted as ready: really "available", Pending included. */
const COUNTED_PHASES: ReadonlySet<unknown> = new Set(['Running', 'Pending'])
/** A label value's limit: the parent's name is the value of the pods' `app` label. */
const MAX_LABEL_VALUE_LENGTH = 63
const LISTED_MISSING_PODS = 5

const parseSpec = specParser(PodSetSpecSchema, podSetResource.kind)

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

function parentName (parent: KubernetesObject): string {
  const { name } = parent.metadata
  if (name === undefined || name === '') throw new HookError(422, 'PodSet has no metadata.name: its pods are named after it')
  if (name.length > MAX_LABEL_VALUE_LENGTH) {
    throw new HookError(422, `PodSet name ${JSON.stringify(name)} is ${name.length} characters long, but its pods carry it in their app label, which allows at most ${MAX_LABEL_VALUE_LENGTH}: recreate the PodSet under a shorter name. No pods were created or changed.`)
  }
  return name
}

function phaseOf (pod: KubernetesObject): unknown {
  return (pod.status as Pod['status'] | undefined)?.phase
}

function missingPods (names: string[]): string {
  const listed = names.slice(0, LISTED_MISSING_PODS).join(', ')
  return names.length > LISTED_MISSING_PODS ? `${listed} and ${names.length - LISTED_MISSING_PODS} more` : listed
}

export function syncPodSet (request: CompositeRequest, now: string): CompositeResponse {
  const { parent } = request
  const name = parentName(parent)
  const spec = parseSpec(parent.spec)
  const observed = observedByName(request.children, 'Pod', 'v1')

  const children: PodChild[] = []
  const available: string[] = []
  const missing: string[] = []
  // Observed pods at or above spec.replicas are removed by this very answer, so they are neither desired nor counted.
  for (let ordinal = 0; ordinal < spec.replicas; ordinal++) {
    const pod = desiredPod({ name, namespace: parent.metadata.namespace }, spec, ordinal)
    const current = observed.get(pod.metadata.name)
    if (current === undefined || !TERMINAL_PHASES.has(phaseOf(current))) children.push(pod)
    if (current !== undefined && current.metadata.deletionTimestamp === undefined && COUNTED_PHASES.has(phaseOf(current))) {
      available.push(pod.metadata.name)
    } else {
      missing.push(pod.metadata.name)
    }
  }

  const generation = parent.metadata.generation
  const conditions = observedConditions(parent.status)
  const counts = `${available.length}/${spec.replicas} pods are running or pending`
  const ready = parent.metadata.deletionTimestamp !== undefined
    ? readyCondition(false, 'Deleting', `the PodSet is being deleted, and its pods with it; ${counts}`, conditions, generation, now)
    : missing.length === 0
      ? readyCondition(true, 'PodsAvailable', counts, conditions, generation, now)
      : readyCondition(false, 'PodsUnavailable', `${counts}; waiting for ${missingPods(missing)}`, conditions, generation, now)
  const status: PodSetStatus = {
    readyReplicas: available.length,
    podNames: available,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: [ready]
  }
  return { status, children }
}
