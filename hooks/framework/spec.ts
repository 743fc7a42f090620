import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, ValueErrorType, type TypeCheck, type ValueError } from '@sinclair/typebox/compiler'
import { unprocessableSpec } from './errors.js'
import { isObject } from './wire/objects.js'

/**
 * Compiles a spec schema into a parser that reads a spec as the API server stores it: unknown fields pruned and the
 * schema's defaults applied (so a curl fixture without defaults behaves like the real object), and rejects what it
 * cannot interpret with an InvalidSpecError.
 */
export function specParser<T extends TSchema> (schema: T, kind: string): (spec: unknown) => Static<T> {
  const check = TypeCompiler.Compile(schema)
  return (spec) => {
    const value = stored(schema, spec ?? {})
    if (check.Check(value)) return value
    throw unprocessableSpec(kind, problems(check, value, 'spec'))
  }
}

/**
 * What `check` finds wrong with `value`, as `<root>.<path>: <what>`, at most five fields. TypeBox reports several
 * errors for one bad field (missing, then of the wrong type): the first of each is kept.
 */
export function problems (check: TypeCheck<TSchema>, value: unknown, root: string): string[] {
  const found = new Map<string, string>()
  for (const error of check.Errors(value)) {
    const path = `${root}${error.path.replaceAll('/', '.')}`
    if (!found.has(path)) found.set(path, `${path}: ${describe(error)}`)
    if (found.size === 5) break
  }
  return [...found.values()]
}

interface SchemaNode {
  type?: unknown
  properties?: Record<string, SchemaNode>
  items?: SchemaNode
  default?: unknown
}

/**
 * What the API server stores of `value` under a structural `schema`: only the fields the schema names (it prunes the
 * others), with a default wherever a field is missing. A fresh copy as deep as the schema goes and no deeper, so the
 * work is bounded by the schema, however deeply a request nests, and the request is never changed.
 */
function stored (schema: SchemaNode, value: unknown): unknown {
  const present = value === undefined && 'default' in schema ? copied(schema.default) : value
  if (schema.type === 'object' && schema.properties !== undefined && isObject(present)) {
    const fields: Record<string, unknown> = {}
    for (const [name, property] of Object.entries(schema.properties)) {
      const field = stored(property, Object.hasOwn(present, name) ? present[name] : undefined)
      if (field !== undefined) fields[name] = field
    }
    return fields
  }
  if (schema.type === 'array' && schema.items !== undefined && Array.isArray(present)) {
    const items = schema.items
    return present.map((item: unknown) => stored(items, item))
  }
  return present
}

/**
 * A default as a spec of its own holds it: an object or array copied, so that no spec shares it with the schema; a
 * string, number or boolean as it is, since structuredClone costs 2 µs a call even for one of those.
 */
function copied (value: unknown): unknown {
  return typeof value === 'object' && value !== null ? structuredClone(value) : value
}

/** TypeBox says only "Expected union value" for an enum or an int-or-string: name what is accepted instead. */
function describe (error: ValueError): string {
  // A schema's own message says what Metacontroller sends and what to do.
  const own = (error.schema as { errorMessage?: unknown }).errorMessage
  if (typeof own === 'string') return own
  const options = (error.schema as { anyOf?: Array<{ const?: unknown, type?: unknown }> }).anyOf
  if (error.type !== ValueErrorType.Union || options === undefined) return error.message
  if (options.every((option) => 'const' in option)) return `Expected one of ${options.map((option) => JSON.stringify(option.const)).join(', ')}`
  return `Expected ${options.map((option) => String(option.type)).join(' or ')}`
}
