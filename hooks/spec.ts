import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import { unprocessableSpec } from './errors.js'

/**
 * Compiles a spec schema into a parser that applies the schema's defaults (as the API server does, so a curl
 * fixture without defaults behaves like the real object) and rejects what it cannot interpret with a 422.
 */
export function specParser<T extends TSchema> (schema: T, kind: string): (spec: unknown) => Static<T> {
  const check = TypeCompiler.Compile(schema)
  return (spec) => {
    const value: unknown = Value.Default(schema, Value.Clone(spec ?? {}))
    if (check.Check(value)) return value
    const problems = [...check.Errors(value)].slice(0, 5).map((error) => `spec${error.path.replaceAll('/', '.')}: ${error.message}`)
    throw unprocessableSpec(kind, problems)
  }
}
