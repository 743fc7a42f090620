import { isDeepStrictEqual } from 'node:util'
import { MAX_OBSERVED_DEPTH, nestsDeeperThan, objectKey } from './objects.js'
import type { KubernetesObject } from './schemas.js'

/**
 * The one answer that leaves an observed child exactly as it is, under Metacontroller's default apply
 * (`dynamic-apply`: pkg/controller/common/manage_children.go and pkg/dynamic/apply/apply.go of v4.17.2).
 *
 * When Metacontroller creates a child, it records the desired object in the child's last-applied annotation. On every
 * later sync it merges the answer's desired object into the observed child, three ways, against that record; puts
 * the system metadata and the status back as observed; writes the answer into the annotation; and when the result
 * differs from the observed child, updates it (InPlace), deletes it (Recreate) or leaves it (OnDelete). An observed
 * child missing from a 200 answer is deleted. So the child's own last-applied configuration, answered back, changes
 * nothing exactly when merging it onto the child changes no field and Metacontroller writes the annotation back with
 * the same bytes; a child without the annotation has no such answer.
 */

export const LAST_APPLIED_ANNOTATION = 'metacontroller.k8s.io/last-applied-configuration'

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

/** The fields Metacontroller puts back as observed after the merge (manage_children.go objectMetaSystemFields). */
export const SYSTEM_METADATA = ['selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'managedFields']

/** The fields apply.go merges a list of objects by, the first that every item has (knownMergeKeys). */
export const MERGE_KEYS = ['containerPort', 'port', 'mountPath', 'name', 'uid', 'ip', 'path']

type JsonObject = Record<string, unknown>

function isObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Go's order of map keys: by their UTF-8 bytes, which differs from JavaScript's UTF-16 order beyond U+FFFF. */
function goKeyOrder (a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

function sortedKeys (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys)
  if (!isObject(value)) return value
  return Object.fromEntries(Object.keys(value).sort(goKeyOrder).map((key) => [key, sortedKeys(value[key])]))
}

const GO_ESCAPED = /[<>&\u2028\u2029]/g

/**
 * The text Go's encoding/json writes for a decoded JSON value, as Metacontroller writes the annotation: keys sorted,
 * and `<`, `>`, `&`, U+2028 and U+2029 escaped, where JSON.stringify writes them as they are (both write the other
 * control characters alike, Go since 1.22).
 */
export function goJson (value: unknown): string {
  return JSON.stringify(sortedKeys(value)).replace(GO_ESCAPED, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** The items of a list by their merge key (apply.go makeListMap), or undefined where two items share one or a key is no string or integer. */
function byMergeKey (items: unknown[], key: string): Map<string, unknown> | undefined {
  const map = new Map<string, unknown>()
  for (const item of items) {
    const value = (item as JsonObject)[key]
    // Go formats a number key with %v: 80 and "80" are the same key there.
    const text = typeof value === 'string' ? value : Number.isSafeInteger(value) ? String(value) : undefined
    if (text === undefined || map.has(text)) return undefined
    map.set(text, item)
  }
  return map
}

/**
 * apply.go detectListMapKey: the merge key of lists whose items are all objects, or undefined for a plain list; the
 * first of `keys` that every item has.
 */
export function listMapKey (lists: unknown[][], keys: readonly string[] = MERGE_KEYS): string | undefined {
  const items = lists.flat()
  if (items.length === 0 || !items.every(isObject)) return undefined
  return keys.find((key) => items.every((item) => Object.hasOwn(item, key)))
}

/**
 * Whether apply.go's merge of `desired` into `observed`, with `desired` as the last-applied configuration too, gives
 * `observed` back. With the two the same, the merge removes no field; it sets each field of `desired`, replaces a
 * plain list, and merges a list of objects item by item. Where Go would fail, or where the outcome depends on more
 * than this models (a list of items sharing a merge key, a type that differs from the observed one), the answer is
 * no: the hook then does not claim to keep the child.
 */
function mergeKeeps (observed: unknown, desired: unknown): boolean {
  if (isObject(observed)) {
    if (desired === null) return true
    return isObject(desired) && Object.entries(desired).every(([key, value]) => Object.hasOwn(observed, key) && mergeKeeps(observed[key], value))
  }
  if (Array.isArray(observed)) {
    if (!Array.isArray(desired)) return false
    const key = listMapKey([observed, desired])
    if (key === undefined) return isDeepStrictEqual(observed, desired)
    const current = byMergeKey(observed, key)
    const wanted = byMergeKey(desired, key)
    if (current === undefined || wanted === undefined) return false
    return [...wanted].every(([name, item]) => current.has(name) && mergeKeeps(current.get(name), item))
  }
  return isDeepStrictEqual(observed, desired)
}

/** `applied` without what Metacontroller puts back as observed after the merge: the system metadata and the status. */
function withoutRevertedFields (applied: JsonObject & { metadata: JsonObject }): JsonObject {
  const { status, ...rest } = applied
  const metadata = Object.fromEntries(Object.entries(applied.metadata).filter(([field]) => !SYSTEM_METADATA.includes(field)))
  return { ...rest, metadata }
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
  if (!mergeKeeps(child, withoutRevertedFields({ ...applied, metadata }))) {
    return { reason: `${name} differs from its ${LAST_APPLIED_ANNOTATION}, so Metacontroller would change it back` }
  }
  return { answer: applied as KubernetesObject }
}
