import { isDeepStrictEqual } from 'node:util'
import { applyUpdate, goJson, LAST_APPLIED_ANNOTATION } from './apply.js'
import { isObject, MAX_OBSERVED_DEPTH, nestsDeeperThan, objectKey } from './objects.js'
import type { KubernetesObject } from './schemas.js'

/**
 * The one answer that leaves an observed child exactly as it is, under Metacontroller's default apply
 * (`dynamic-apply`, modelled in apply.ts).
 *
 * When Metacontroller creates a child, it records the desired object in the child's last-applied annotation. On every
 * later sync it merges the answer's desired object into the observed child, three ways, against that record; puts
 * the system metadata and the status back as observed; writes the answer into the annotation; and when the result
 * differs from the observed child, updates it (InPlace), deletes it (Recreate) or leaves it (OnDelete). An observed
 * child missing from a 200 answer is deleted. So the child's own last-applied configuration, answered back, changes
 * nothing exactly when merging it onto the child changes no field and Metacontroller writes the annotation back with
 * the same bytes; a child without the annotation has no such answer.
 */

/**
 * What Metacontroller sets on every desired child before applying it: the parent's namespace where the child names
 * none, and labels (a CompositeController's `controller-uid`) or annotations (a DecoratorController's name). A child
 * is kept as it is only if its last-applied configuration holds them already: otherwise the annotation changes.
 */
export interface Stamp {
  namespace: string | undefined
  labels: Record<string, string>
  annotations: Record<string, string>
}

function holds (map: unknown, wanted: Record<string, string>): boolean {
  return Object.entries(wanted).every(([key, value]) => isObject(map) && map[key] === value)
}

export type UnchangingAnswer = { answer: KubernetesObject } | { reason: string }

/**
 * The answer for `child` that Metacontroller applies without changing anything (its last-applied configuration), or
 * why there is none.
 */
export function unchangingAnswer (child: KubernetesObject, stamp: Stamp): UnchangingAnswer {
  const name = `${child.kind} ${objectKey(child)}`
  const text = child.metadata.annotations?.[LAST_APPLIED_ANNOTATION]
  if (text === undefined || text === '') return { reason: `${name} has no ${LAST_APPLIED_ANNOTATION} annotation` }
  let applied: unknown
  try {
    applied = JSON.parse(text)
  } catch {
    return { reason: `${name}'s ${LAST_APPLIED_ANNOTATION} is not JSON` }
  }
  if (!isObject(applied) || !isObject(applied.metadata) || nestsDeeperThan(applied, MAX_OBSERVED_DEPTH)) {
    return { reason: `${name}'s ${LAST_APPLIED_ANNOTATION} is not an object Metacontroller applied` }
  }
  const metadata = applied.metadata
  // Metacontroller would write the annotation anew: from an answer whose text it encodes otherwise (a number beyond
  // 2^53, keys out of Go's order), or to which it adds what the stamp holds.
  if (goJson(applied) !== text) return { reason: `${name}'s ${LAST_APPLIED_ANNOTATION} is not as Metacontroller writes it` }
  if (applied.apiVersion !== child.apiVersion || applied.kind !== child.kind || metadata.name !== child.metadata.name || metadata.namespace !== child.metadata.namespace) {
    return { reason: `${name}'s ${LAST_APPLIED_ANNOTATION} names another object` }
  }
  const defaultsNamespace = (metadata.namespace ?? '') === '' && (stamp.namespace ?? '') !== ''
  if (defaultsNamespace || !holds(metadata.labels, stamp.labels) || !holds(metadata.annotations, stamp.annotations) ||
    (isObject(metadata.annotations) && Object.hasOwn(metadata.annotations, LAST_APPLIED_ANNOTATION))) {
    return { reason: `${name}'s ${LAST_APPLIED_ANNOTATION} lacks what Metacontroller adds to every child` }
  }
  if (!isDeepStrictEqual(applyUpdate(child, applied as KubernetesObject), child)) {
    return { reason: `${name} differs from its ${LAST_APPLIED_ANNOTATION}, so Metacontroller would change it back` }
  }
  return { answer: applied as KubernetesObject }
}
