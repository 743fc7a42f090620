import { groupKey, isObject } from './wire/objects.js'

/**
 * The fields of observed children that a controller's hooks read, as its `childResources` declare them
 * (`observedFields`). A Pod carries about a kilobyte of spec that a hook reading its status never looks at, and
 * parsing it is half of what parsing a PodSet request of 2,000 pods costs: the server leaves such fields out of a large
 * request before it parses it (http/request-body.ts), and every hook gets the declared fields alone, whatever the
 * request's size, so that a hook that reads an undeclared field finds it missing in its tests too.
 */

/** What every observed child keeps: what names it, and its metadata (its labels, and the last-applied configuration). */
const ALWAYS_READ = ['apiVersion', 'kind', 'metadata']

/** By group (`Pod.v1`), the top-level fields kept of each child of a kind that declares `observedFields`. */
export type ReadFields = ReadonlyMap<string, ReadonlySet<string>>

/** A child kind as a controller's `childResources` declare it. */
interface ChildKind {
  apiVersion: string
  kind: string
  observedFields?: readonly string[]
}

/** What hooks read of the children of `kinds`, or undefined when they read every field of every child. */
export function readFields (kinds: readonly ChildKind[]): ReadFields | undefined {
  const groups = new Map<string, ReadonlySet<string>>()
  for (const child of kinds) {
    if (child.observedFields !== undefined) groups.set(groupKey(child.kind, child.apiVersion), new Set([...ALWAYS_READ, ...child.observedFields]))
  }
  return groups.size === 0 ? undefined : groups
}

type Json = Record<string, unknown>

/**
 * `request` with each child of a group in `fields` holding the fields kept alone; what else it holds is shared, not
 * copied, and `request` itself is left as it is (the InvalidSpec answer reads it whole).
 */
export function withReadFieldsOnly<Request> (request: Request, fields: ReadFields): Request {
  if (!isObject(request) || !isObject(request.children)) return request
  const children: Json = { ...request.children }
  for (const [group, kept] of fields) {
    const objects = children[group]
    if (!isObject(objects)) continue
    // Keys are `namespace/name`: never `__proto__`, which a request the server parsed cannot hold (request-body.ts).
    const read: Json = {}
    for (const key of Object.keys(objects)) {
      const object = objects[key]
      read[key] = isObject(object) ? only(object, kept) : object
    }
    children[group] = read
  }
  return { ...request, children } as Request
}

/** The fields of `object` named in `kept` (declared field names: never `__proto__`). */
function only (object: Json, kept: ReadonlySet<string>): Json {
  const fields: Json = {}
  for (const name of Object.keys(object)) if (kept.has(name)) fields[name] = object[name]
  return fields
}
