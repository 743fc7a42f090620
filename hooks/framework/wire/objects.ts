import type { KubernetesObject, ObjectMap } from './schemas.js'

/** Whether `value` is a JSON object, neither null nor an array; `T` is what the caller reads it as. */
export function isObject<T extends object = Record<string, unknown>> (value: unknown): value is T {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The key Metacontroller v2 gives an object in a children/attachments map. */
export function objectKey (object: Pick<KubernetesObject, 'metadata'>): string {
  const { namespace, name } = object.metadata
  return namespace === undefined || namespace === '' ? String(name) : `${namespace}/${name}`
}

/** The map group of one child rule: `Pod.v1`, `StatefulSet.apps/v1`. */
export function groupKey (kind: string, apiVersion: string): string {
  return `${kind}.${apiVersion}`
}

/**
 * The observed objects of one kind, keyed by `metadata.name` (children share the parent's namespace), typed as the
 * API server stores that kind (e.g. `Pod` from kubernetes-types): every field is optional, so a reader checks
 * presence, and the type of any value whose misuse would do harm.
 */
export function observedByName<Kind extends object = object> (map: ObjectMap, kind: string, apiVersion: string): Map<string, KubernetesObject & Kind> {
  const byName = new Map<string, KubernetesObject & Kind>()
  for (const object of Object.values(map[groupKey(kind, apiVersion)] ?? {})) {
    if (typeof object.metadata.name === 'string') byName.set(object.metadata.name, object as KubernetesObject & Kind)
  }
  return byName
}

/**
 * Deeper than any object the API server stores (a Pod with its managedFields nests about 10 levels): an observed
 * value nested deeper was not sent by Metacontroller.
 */
export const MAX_OBSERVED_DEPTH = 64

/** Whether `value` nests objects and arrays more than `limit` levels deep; walked without recursion, so any depth is safe. */
export function nestsDeeperThan (value: unknown, limit: number): boolean {
  const pending: Array<{ value: unknown, depth: number }> = [{ value, depth: 0 }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next.value !== 'object' || next.value === null) continue
    if (next.depth === limit) return true
    for (const inner of Object.values(next.value)) pending.push({ value: inner, depth: next.depth + 1 })
  }
  return false
}

/** The Kubernetes recommended labels for a child. */
export function recommendedLabels (name: string, instance: string, component: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/instance': instance,
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/managed-by': 'metacontroller-hooks'
  }
}
