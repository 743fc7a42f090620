import { Type, type Static, type TArray, type TBoolean, type TInteger, type TObject, type TProperties, type TSchema, type TString } from '@sinclair/typebox'

/**
 * How the configuration is written: each environment variable is a TypeBox schema of the values it accepts, with what
 * the docs and the messages say of it, in a group the docs give together. The server's own variables
 * (hooks/runtime/config-schema.ts) and a controller's own (its `settings`) are written alike, read together at
 * start-up, and documented together by `npm run generate`.
 */

/** What the schema of each variable carries besides the values it accepts. */
export interface VariableOptions {
  /** One short line: the README's configuration table. */
  summary: string
  /** The rest, in depth, for docs/configuration.md: Markdown paragraphs. */
  details?: string
  /** What a value must be, in messages and the docs, where the schema's type and bounds do not say it well. */
  expected?: string
  /** Why the bounds are what they are, added to the message of a value outside them. */
  why?: string
  /** A value to show in .env.example, for a variable without a default. */
  example?: string
  /** The default as a person writes it (`16Mi`), where it differs from the value. */
  shownDefault?: string
  /** How the text of the variable is read, when not as its type says: a size with a unit. */
  syntax?: 'size'
  /** A secret: never shown, and .env.example shows no example value. */
  secret?: boolean
}

// A constructor per kind of value, so that each variable's options are checked as VariableOptions too.
export const integer = (options: VariableOptions & { default?: number, minimum: number, maximum?: number }): TInteger => Type.Integer(options)
export const port = (options: VariableOptions & { default: number }): TInteger => integer({ minimum: 0, maximum: 65535, ...options })
export const text = (options: VariableOptions & { default?: string, pattern?: string }): TString => Type.String(options)
export const flag = (options: VariableOptions & { default: boolean }): TBoolean => Type.Boolean(options)
export const seconds = integer
/** A comma-separated list, each item checked against `items`. */
export const list = <Item extends TSchema>(items: Item, options: VariableOptions): TArray<Item> => Type.Array(items, options)

/** Variables the docs give together: under a title, after what they say of the group. */
export interface VariableGroup<Variables extends TProperties = TProperties> {
  title: string
  text: string
  variables: Variables
}

/**
 * A controller's own settings: its group of variables, read with the server's at start-up, and what it makes of
 * their values (defaults applied), which its `connect` gets.
 */
export interface ControllerSettings<Settings = unknown> {
  group: VariableGroup
  read: (settings: Readonly<Record<string, unknown>>) => Settings
}

/** A controller's settings, `read` typed by the variables of `group`. */
export function controllerSettings<Variables extends TProperties, Settings> (
  group: VariableGroup<Variables>,
  read: (settings: Static<TObject<Variables>>) => Settings
): ControllerSettings<Settings> {
  return { group, read: (settings) => read(settings as Static<TObject<Variables>>) }
}
