import { createHash } from 'node:crypto'
import { goKeyOrder } from '../../hooks/framework/wire/apply.js'
import { kubernetesTime } from '../../hooks/framework/wire/conditions.js'

/** Stable ids, hashes and times derived from names, so that the same call always gives the same bytes; Go's JSON. */

/** Keys sorted at every level, as Go's encoding/json writes an unstructured object (how Metacontroller sends one). */
export function sortedKeys<T> (value: T): T {
  if (Array.isArray(value)) return value.map(sortedKeys) as T
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => goKeyOrder(a, b)).map(([k, v]) => [k, sortedKeys(v)])) as T
}

/** JSON as Go writes it: the last-applied annotations. */
export { goJson } from '../../hooks/framework/wire/apply.js'

export function digest (text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/** A uuid-shaped id that depends only on `text`. */
export function uidFor (text: string): string {
  const hex = digest(text)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** A number in [0, modulo) that depends only on `text`. */
export function hashNumber (text: string, modulo: number): number {
  return Number.parseInt(digest(text).slice(0, 8), 16) % modulo
}

export function addSeconds (time: string, seconds: number): string {
  return kubernetesTime(new Date(Date.parse(time) + seconds * 1000))
}
