import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, ValueErrorType, type ValueError } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import { unprocessableSpec } from './errors.js'

/**
 * Compiles a spec schema into a parser that applies the schema's defaults (as the API server does, so a curl
 * fixture without defaults behaves like the real object) and rejects what it cannot interpret with a 422.
 */
export function specParser<T extends TSchema> (schema: T, kind: string): (spec: unknown) => Static<T> {
  const check = TypeCompiler.Compile(schema)
  return (spec) => {
    // structuredClone, not Value.Clone: Value.Clone copies with assignments, and an assigned `__proto__` key (JSON.parse
    // makes it an own property) would give the copy a prototype whose fields then count as the spec's.
    const value: unknown = Value.Default(schema, structuredClone(spec ?? {}))
    if (check.Check(value)) return value
    // TypeBox reports several errors for one bad field (missing, then of the wrong type): keep the first of each.
    const problems = new Map<string, string>()
    for (const error of check.Errors(value)) {
      const path = `spec${error.path.replaceAll('/', '.')}`
      if (!problems.has(path)) problems.set(path, `${path}: ${describe(error)}`)
      if (problems.size === 5) break
    }
    throw unprocessableSpec(kind, [...problems.values()])
  }
}

/** TypeBox says only "Expected union value" for an enum or an int-or-string: name what is accepted instead. */
function describe (error: ValueError): string {
  const options = (error.schema as { anyOf?: Array<{ const?: unknown, type?: unknown }> }).anyOf
  if (error.type !== ValueErrorType.Union || options === undefined) return error.message
  if (options.every((option) => 'const' in option)) return `Expected one of ${options.map((option) => JSON.stringify(option.const)).join(', ')}`
  return `Expected ${options.map((option) => String(option.type)).join(' or ')}`
}
