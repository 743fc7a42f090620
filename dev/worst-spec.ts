import type { TSchema } from '@sinclair/typebox'
import type { CustomResource } from '../hooks/framework/custom-resource.js'

/**
 * The spec a CRD admits that asks for the largest answer, computed from the spec's TypeBox schema (the one the CRD
 * is generated from and the hook reads parents with): every field present, every string at its maxLength, every list
 * at its maxItems, every number at its maximum. A string is made of the character that JSON writes in the most bytes
 * among those its pattern admits: a control character is written `\u0001` (6 bytes), `"` as `\"`, `€` in 3 bytes of
 * UTF-8. A field this cannot bound fails with what to declare.
 */

interface SchemaNode {
  type?: string
  properties?: Record<string, SchemaNode>
  additionalProperties?: unknown
  patternProperties?: unknown
  items?: SchemaNode
  anyOf?: SchemaNode[]
  const?: unknown
  default?: unknown
  example?: unknown
  maxLength?: number
  minLength?: number
  pattern?: string
  maxItems?: number
  maximum?: number
  'x-kubernetes-int-or-string'?: boolean
}

/** Costliest first: what JSON.stringify writes of one character, in UTF-8 bytes: 6, 2, 3, 2 and 1. */
const CHARACTERS = ['\u0001', '"', '\u20ac', '\u00e9', 'a']

/** The string of `length` characters that `schema` admits and JSON writes in the most bytes; undefined when none is found. */
function worstString (schema: SchemaNode, length: number): string | undefined {
  const pattern = schema.pattern === undefined ? undefined : new RegExp(schema.pattern)
  // A pattern that asks for a prefix (pulsar://) is met by the field's default or example, filled up to the length.
  const seeds = ['', ...[schema.default, schema.example].filter((seed): seed is string => typeof seed === 'string' && seed.length <= length)]
  for (const character of CHARACTERS) {
    for (const seed of seeds) {
      const candidate = seed + character.repeat(length - seed.length)
      if (pattern === undefined || pattern.test(candidate)) return candidate
    }
  }
  return undefined
}

/** A schema that sets no bound where the worst spec needs one: the author's to declare, said in one line. */
export class UnboundedSpecError extends Error {}

function unbounded (path: string, what: string): never {
  throw new UnboundedSpecError(`${path} is ${what}, so the CRD admits custom resources whose answer has no bound: declare it on the controller's TypeBox schema`)
}

/** The worst value of `schema` at `path`; fails, naming the field and what to declare, where the schema sets no bound. */
export function worstValue (schema: TSchema | SchemaNode, path = 'spec'): unknown {
  const node = schema as SchemaNode
  if (node.anyOf !== undefined) {
    if (node.anyOf.every((option) => 'const' in option)) {
      // An enum: its longest value.
      return node.anyOf.map((option) => option.const).reduce((longest, value) => String(value).length > String(longest).length ? value : longest)
    }
    // An int-or-string (a quantity) holds a value that rules in CEL check, which this cannot solve: its default stands
    // for it, and its maxLength bounds what it may be.
    if (node['x-kubernetes-int-or-string'] === true && node.default !== undefined && node.anyOf.some((option) => option.maxLength !== undefined)) return node.default
    return unbounded(path, 'a union other than an enum or an int-or-string with a default and a maxLength')
  }
  switch (node.type) {
    case 'object': {
      if (node.additionalProperties !== undefined && node.additionalProperties !== false) return unbounded(path, 'a map (the API server cannot bound its keys): use a list of objects with a bounded name instead')
      if (node.patternProperties !== undefined) return unbounded(path, 'a map (the API server cannot bound its keys): use a list of objects with a bounded name instead')
      return Object.fromEntries(Object.entries(node.properties ?? {}).map(([name, property]) => [name, worstValue(property, `${path}.${name}`)]))
    }
    case 'array': {
      if (node.maxItems === undefined) return unbounded(path, 'a list without maxItems')
      if (node.items === undefined) return unbounded(path, 'a list of anything')
      const item = worstValue(node.items, `${path}[]`)
      return Array.from({ length: node.maxItems }, () => structuredClone(item))
    }
    case 'string': {
      if (node.maxLength === undefined) return unbounded(path, 'a string without maxLength')
      const value = worstString(node, node.maxLength)
      if (value === undefined) throw new UnboundedSpecError(`${path}: no string of ${node.maxLength} characters of one kind meets its pattern ${node.pattern ?? ''}: give the field an example (or a default) that it admits, either as long as maxLength or one that a character repeated fills up to it (docs/writing-a-controller.md shows how)`)
      return value
    }
    case 'integer':
    case 'number':
      if (node.maximum === undefined) return unbounded(path, 'a number without maximum')
      return node.maximum
    case 'boolean':
      return true
    default:
      return unbounded(path, `of a type this cannot bound (${String(node.type)})`)
  }
}

/** A resource with the worst spec under the longest name it takes, as a person would apply it (no namespace). */
export function worstResource (resource: CustomResource): { apiVersion: string, kind: string, metadata: { name: string }, spec: unknown } {
  // 'a' meets every name rule: a DNS subdomain, and a DNS label that starts with a letter.
  return { apiVersion: resource.apiVersion, kind: resource.kind, metadata: { name: 'a'.repeat(resource.name?.maxLength ?? 253) }, spec: worstValue(resource.spec) }
}
