import { isObject } from './objects.js'
import type { KubernetesObject } from './schemas.js'

/**
 * Metacontroller's default apply (`dynamic-apply`: pkg/dynamic/apply/apply.go and
 * pkg/controller/common/manage_children.go of v4.17.2), the one model of it: the hook answers a spec it cannot use
 * with it (last-applied.ts), and the development tools plan what Metacontroller does with an answer with it
 * (dev/metacontroller-apply.ts).
 */

export const LAST_APPLIED_ANNOTATION = 'metacontroller.k8s.io/last-applied-configuration'

/** The fields Metacontroller puts back as observed after the merge (manage_children.go objectMetaSystemFields). */
export const SYSTEM_METADATA = ['selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'managedFields']

/** The fields apply.go merges a list of objects by, the first that every item has (knownMergeKeys). */
export const MERGE_KEYS = ['containerPort', 'port', 'mountPath', 'name', 'uid', 'ip', 'path']

type Json = Record<string, any>

/** Go's order of map keys: by their UTF-8 bytes, which differs from JavaScript's UTF-16 order beyond U+FFFF. */
export function goKeyOrder (a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

const GO_ESCAPED = /[<>&\u2028\u2029]/g

/**
 * The text Go's encoding/json writes for a decoded JSON value, as Metacontroller writes the annotation: keys sorted,
 * and `<`, `>`, `&`, U+2028 and U+2029 escaped, where JSON.stringify writes them as they are (both write the other
 * control characters alike, Go since 1.22). Objects are written here rather than rebuilt in order for JSON.stringify:
 * a JavaScript object lists integer-like keys ("9", "10") first, in numeric order, whatever order they were set in.
 */
export function goJson (value: unknown): string {
  return sortedJson(value).replace(GO_ESCAPED, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** JSON.stringify's text with every object's keys in Go's order; as there, an undefined field is left out, and null in a list. */
function sortedJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => item === undefined ? 'null' : sortedJson(item)).join(',')}]`
  if (!isObject(value)) return JSON.stringify(value)
  const keys = Object.keys(value).filter((key) => value[key] !== undefined).sort(goKeyOrder)
  return `{${keys.map((key) => `${JSON.stringify(key)}:${sortedJson(value[key])}`).join(',')}}`
}

/** Go's `%v` of a float64 (every JSON number decodes to one): `%g` with the shortest digits, in exponent form from 1e+06 up and below 1e-04. */
function goFloat (value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0' : '0'
  const [mantissa = '', exponentText = ''] = value.toExponential().split('e')
  const exponent = Number(exponentText)
  if (exponent >= -4 && exponent < 6) return String(value)
  return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`
}

/** Go's `%v` of a decoded JSON scalar: null as `<nil>`. */
function goScalar (value: unknown): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number') return goFloat(value)
  if (typeof value === 'boolean') return String(value)
  return '<nil>'
}

/**
 * Go's `%v` of a decoded JSON value: maps with their keys sorted, lists and maps spaced, null as `<nil>`. Walked with a
 * stack of its own: an observed child's merge key may nest as deep as a body can, which recursion would not survive.
 */
function goValue (value: unknown): string {
  if (!Array.isArray(value) && !isObject(value)) return goScalar(value)
  const text: string[] = []
  // Left to write, last first: a value, or text as it is.
  const pending: Array<{ value: unknown } | { text: string }> = [{ value }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if ('text' in next) {
      text.push(next.text)
      continue
    }
    const current = next.value
    const entries: Array<[string, unknown]> | undefined = Array.isArray(current)
      ? current.map((item) => ['', item])
      : isObject(current) ? Object.keys(current).sort(goKeyOrder).map((key) => [`${key}:`, current[key]]) : undefined
    if (entries === undefined) {
      text.push(goScalar(current))
      continue
    }
    pending.push({ text: ']' })
    entries.reverse().forEach(([label, item], index) => {
      pending.push({ value: item }, { text: label })
      if (index < entries.length - 1) pending.push({ text: ' ' })
    })
    pending.push({ text: Array.isArray(current) ? '[' : 'map[' })
  }
  return text.join('')
}

/** What apply.go matches a list's items by: its `stringMergeKey`, Go's `%v` of the merge key's value. */
export function mergeKeyOf (item: Json, key: string): string {
  return goValue(Object.hasOwn(item, key) ? item[key] : undefined)
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
 * The diff from `lastApplied` to `desired`, applied to `destination`: a field the last answer had and this one has
 * not is removed, every field of this answer is set, and everything else (what the API server and other controllers
 * set) is kept. A value where an object or list was is taken as empty, as Go's type assertions leave it
 * (apply.go:81-132). Where apply.go mutates a deep copy of the observed object, this builds new objects along the
 * fields the answers name and shares the rest with `destination`: an observed child nested deeper than any answer is
 * then neither copied nor compared beyond the answer's depth.
 */
function merge (destination: unknown, lastApplied: unknown, desired: unknown): unknown {
  if (isObject(destination)) return mergeObject(destination, isObject(lastApplied) ? lastApplied : {}, isObject(desired) ? desired : {})
  if (Array.isArray(destination)) return mergeArray(destination, Array.isArray(lastApplied) ? lastApplied : [], Array.isArray(desired) ? desired : undefined)
  return structuredClone(desired)
}

/** A key's own value: a key such as `constructor` is a field like any other. */
const own = (object: Json, key: string): unknown => Object.hasOwn(object, key) ? object[key] : undefined

function mergeObject (destination: Json, lastApplied: Json, desired: Json): Json {
  const merged = { ...destination }
  for (const key of Object.keys(lastApplied)) {
    if (!Object.hasOwn(desired, key)) delete merged[key]
  }
  for (const [key, value] of Object.entries(desired)) merged[key] = merge(own(destination, key), own(lastApplied, key), value)
  return merged
}

/**
 * A list of objects sharing a merge key is merged item by item, keeping the order it had, an item whose key another
 * shares taken once, the last of them; any other list is replaced (apply.go:134-189).
 */
function mergeArray (destination: unknown[], lastApplied: unknown[], desired: unknown[] | undefined): unknown {
  const key = listMapKey([destination, lastApplied, desired ?? []])
  if (key === undefined) return desired === undefined ? null : structuredClone(desired)
  const byKey = (list: unknown[]): Json => Object.fromEntries((list as Json[]).map((item) => [mergeKeyOf(item, key), item]))
  const merged = mergeObject(byKey(destination), byKey(lastApplied), byKey(desired ?? []))
  const order = [...(destination as Json[]), ...((desired ?? []) as Json[])].map((item) => mergeKeyOf(item, key))
  return [...new Set(order)].filter((itemKey) => Object.hasOwn(merged, itemKey)).map((itemKey) => merged[itemKey])
}

/**
 * `target` with `metadata.<field>` or `status` (`path`) as in `source`, or without it where `source` has none
 * (manage_children.go:103-123); the objects on the way are copied, as they may be shared with `source`.
 */
function reverted (target: Json, source: Json, path: readonly string[]): Json {
  const [key, ...rest] = path as [string, ...string[]]
  const from = own(source, key)
  const copy = { ...target }
  if (rest.length === 0) {
    if (Object.hasOwn(source, key)) copy[key] = from
    else delete copy[key]
  } else if (isObject(from) || isObject(own(target, key))) {
    copy[key] = reverted(isObject(own(target, key)) ? target[key] : {}, isObject(from) ? from : {}, rest)
  }
  return copy
}

/**
 * The object Metacontroller would write over `observed` for the desired child (ApplyUpdate, manage_children.go:41-74):
 * a three-way merge of the observed object, the last answer (its last-applied annotation) and this answer, with the
 * system fields and the status as observed, and this answer as the new annotation. When it equals `observed`,
 * Metacontroller leaves the child as it is. It shares what it does not change with `observed`: read it, never change it. Throws where Metacontroller's sync would fail: an annotation that is not
 * JSON.
 */
export function applyUpdate (observed: KubernetesObject, desired: KubernetesObject): KubernetesObject {
  const annotation = observed.metadata.annotations?.[LAST_APPLIED_ANNOTATION]
  let lastApplied: unknown = null
  if (annotation !== undefined && annotation !== '') {
    try {
      lastApplied = JSON.parse(annotation)
    } catch (error) {
      throw new Error(`its ${LAST_APPLIED_ANNOTATION} annotation is not JSON (${(error as Error).message}), so Metacontroller's sync fails on it until the annotation is repaired or removed`)
    }
  }
  const answer = structuredClone(desired) as Json
  if (isObject(answer.metadata?.annotations)) delete answer.metadata.annotations[LAST_APPLIED_ANNOTATION]
  let merged = merge(observed, lastApplied, answer) as Json
  // ObjectMeta's read-only fields, which the API server sets, are never a difference (manage_children.go:76-101).
  for (const field of SYSTEM_METADATA) merged = reverted(merged, observed, ['metadata', field])
  merged = reverted(merged, observed, ['status'])
  merged.metadata = { ...merged.metadata, annotations: { ...merged.metadata?.annotations, [LAST_APPLIED_ANNOTATION]: goJson(answer) } }
  return merged as KubernetesObject
}
