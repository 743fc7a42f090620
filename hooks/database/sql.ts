import type { Value } from './pg-internals.js'

/**
 * Statements with named parameters. A statement's text writes each parameter as `$name`; PostgreSQL receives the
 * positional `$1`, `$2`, … in the order the statement lists its parameters, and the values in that order. So a
 * reader checks a statement against its parameters by name, never by counting, and a name the text misspells, or a
 * parameter it never uses, fails the first time the text is built.
 *
 * A text may also depend on a `shape`: the identifiers it names (a schema, a table), which SQL cannot take as
 * parameters. Only identifiers belong there; values travel as parameters.
 */

export interface StatementDefinition<Parameter extends string, Shape> {
  /** What the statement does, in a few words: for a reader, and as the key of its texts. */
  name: string
  parameters: readonly Parameter[]
  /** The text PostgreSQL receives for `shape`, with positional parameters. */
  text: (shape: Shape) => string
  /** The values of the parameters, in their positional order. */
  values: (values: Readonly<Record<Parameter, Value>>) => Value[]
}

/** `$name`: a lowercase letter, then letters and digits. PostgreSQL's own `$1` never matches. */
const PLACEHOLDER = /\$([a-z][A-Za-z0-9]*)/g

export function defineStatement<const Parameter extends string, Shape = void> (
  name: string,
  parameters: readonly Parameter[],
  write: (shape: Shape) => string
): StatementDefinition<Parameter, Shape> {
  const positions = new Map<string, number>(parameters.map((parameter, index) => [parameter, index + 1]))
  return {
    name,
    parameters,
    text: (shape) => {
      const used = new Set<string>()
      const text = write(shape).replace(PLACEHOLDER, (_placeholder, parameter: string) => {
        const position = positions.get(parameter)
        if (position === undefined) throw new Error(`statement "${name}" writes $${parameter}, which is not one of its parameters (${parameters.join(', ')})`)
        used.add(parameter)
        return `$${position}`
      })
      const unused = parameters.filter((parameter) => !used.has(parameter))
      if (unused.length > 0) throw new Error(`statement "${name}" never writes its parameters ${unused.join(', ')}`)
      return text
    },
    values: (values) => parameters.map((parameter) => values[parameter])
  }
}
