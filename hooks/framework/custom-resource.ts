import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { builtInOwner } from './built-in-resources.js'
import { DefinitionError } from './errors.js'
import { specParser } from './spec.js'
import { CommonStatusProperties } from './wire/schemas.js'

export interface PrinterColumn {
  name: string
  type: 'string' | 'integer' | 'date' | 'boolean' | 'number'
  jsonPath: string
}

/**
 * What a parent's `metadata.name` must be beyond what Kubernetes asks, because the hook names what it makes after
 * it. The parent reader refuses other names with a 422 that says why.
 */
export interface NameRule {
  maxLength: number
  /** A regular expression the whole name must match, and what it asks for in words. */
  pattern?: { regex: string, meaning: string }
  /** What carries the name, so that a person knows why. */
  why: string
}

/**
 * A rule the API server checks at `kubectl apply` (a CEL `x-kubernetes-validations` entry in the generated CRD), for
 * what the OpenAPI keywords cannot say. The hook checks the same thing itself, and says the same `message`.
 */
export interface ApplyRule {
  rule: string
  message: string
}

/** Schema options that carry CEL rules into the generated CRD; TypeBox's own checks ignore them. */
export function applyRules (...rules: ApplyRule[]): { 'x-kubernetes-validations': ApplyRule[] } {
  return { 'x-kubernetes-validations': rules }
}

/** `text` as a CEL string literal. */
export function celString (text: string): string {
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
}

/**
 * A characters-only class that means the same in ECMAScript (the hook) and RE2 (the API server): printable ASCII but
 * the space. `\S` would not: RE2's leaves out only ASCII whitespace, so the API server would take a no-break space the
 * hook refuses.
 */
export const VISIBLE_ASCII = '[!-~]'

/**
 * Bounds of an image reference, for the spec fields that hold one: a repository of at most 255 characters, its
 * registry included (the limit registries and their clients keep), a tag of at most 128 (the distribution spec's),
 * and a digest (`sha256:` and 64 hex digits): `<repository>:<tag>@<digest>`. Every string and list of a spec has a
 * bound, so that no spec the CRD admits asks for an answer larger than the hook sends (framework/answer-budget.ts).
 */
export const IMAGE_REPOSITORY_MAX_LENGTH = 255
export const IMAGE_TAG_MAX_LENGTH = 128
export const IMAGE_REFERENCE_MAX_LENGTH = IMAGE_REPOSITORY_MAX_LENGTH + 1 + IMAGE_TAG_MAX_LENGTH + 1 + 'sha256:'.length + 64

export interface CustomResourceDefinition<Spec extends TObject, StatusFields extends TProperties> {
  group: string
  version: string
  /** PascalCase, as in `kind:` of a manifest. */
  kind: string
  /** What `kubectl get` takes, and the CRD's name before the group. Default: the kind in lowercase, in the English plural. */
  plural?: string
  /** Default: the kind in lowercase. */
  singular?: string
  /** Abbreviations `kubectl get` takes (`pgw`). */
  shortNames?: string[]
  /** Groups `kubectl get <category>` lists together with other kinds (`all` is one). */
  categories?: string[]
  /** The spec as the hook sees it: a field with a default is required here, and optional in the CRD. */
  spec: Spec
  /** The controller's own status fields; `observedGeneration` and `conditions` follow them. */
  status: StatusFields
  /** The resource's own columns; Ready (the condition's status, unless one of these is named Ready) and Age follow. */
  printerColumns: PrinterColumn[]
  name?: NameRule
  /**
   * A spec for the example resource `npm run generate` writes to manifests/examples/<controller>.yaml, where
   * `npm run new-fixture` and the end-to-end suite take it from. Without one, that file is kept as it is.
   */
  exampleSpec?: Static<Spec>
}

/** The parent custom resource: its CRD is generated from this (`npm run generate`), and its hooks read parents with it. */
export interface CustomResource<Spec extends TObject = TObject, StatusFields extends TProperties = TProperties> extends CustomResourceDefinition<Spec, StatusFields> {
  /** The status schema: the controller's fields, then the common ones. */
  statusSchema: TObject<StatusFields & typeof CommonStatusProperties>
  apiVersion: string
  plural: string
  singular: string
  listKind: string
  /** The spec after the schema's defaults; an InvalidSpecError naming each field that cannot be interpreted. */
  parseSpec: (spec: unknown) => Static<Spec>
  /** The controller's own fields of an observed status, those that match their schema (conditions: see observedConditions). */
  observedStatus: (status: unknown) => ObservedStatus<StatusFields>
}

export type ObservedStatus<StatusFields extends TProperties> = Partial<Static<TObject<StatusFields>>>

const READY_COLUMN: PrinterColumn = { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' }
const AGE_COLUMN: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }

/**
 * The English plural of a lowercase word by the regular rules (class → classes, policy → policies, configcopy →
 * configcopies, gateway → gateways); an irregular one is set as `plural`.
 */
export function englishPlural (word: string): string {
  if (/(s|x|z|ch|sh)$/.test(word)) return `${word}es`
  if (/[^aeiou]y$/.test(word)) return `${word.slice(0, -1)}ies`
  return `${word}s`
}

/** What the API server asks of a CRD's plural, singular, short names and categories (a DNS-1035 label). */
const NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/

/** The names of a resource, checked when its module loads, so that a bad one fails every test and `npm run generate` with the reason. */
function resourceNames (definition: Pick<CustomResourceDefinition<TObject, TProperties>, 'kind' | 'plural' | 'singular' | 'shortNames' | 'categories'>): { plural: string, singular: string } {
  const { kind } = definition
  if (!/^[A-Z][A-Za-z0-9]{0,62}$/.test(kind)) throw new DefinitionError(`kind ${JSON.stringify(kind)} cannot name a resource: use PascalCase letters and digits, starting with a capital (ConfigCopy)`)
  const singular = definition.singular ?? kind.toLowerCase()
  const plural = definition.plural ?? englishPlural(singular)
  const kindOwner = builtInOwner(kind.toLowerCase())
  if (kindOwner !== undefined) throw new DefinitionError(`${kind}: kind ${JSON.stringify(kind)} is, in lowercase, ${kindOwner}, a built-in Kubernetes resource, and kubectl would take one for the other: choose another`)
  const named: Array<[string, string]> = [['plural', plural], ['singular', singular], ...(definition.shortNames ?? []).map((name): [string, string] => ['short name', name]), ...(definition.categories ?? []).map((name): [string, string] => ['category', name])]
  for (const [what, name] of named) {
    if (!NAME.test(name)) throw new DefinitionError(`${kind}: ${what} ${JSON.stringify(name)} is not a lowercase DNS label (letters, digits and '-', starting with a letter, at most 63 characters), as the API server requires`)
    // A category groups kinds (`kubectl get all`): sharing one with built-ins is what it is for.
    const owner = what === 'category' ? undefined : builtInOwner(name)
    if (owner !== undefined) throw new DefinitionError(`${kind}: ${what} ${JSON.stringify(name)} is ${owner}, a built-in Kubernetes resource, and kubectl would take one for the other: choose another`)
  }
  return { plural, singular }
}

/**
 * A custom resource from its group, version, kind and schemas: names, the common status fields, the Ready and Age
 * columns and the parsers derived.
 */
export function customResource<Spec extends TObject, StatusFields extends TProperties> (definition: CustomResourceDefinition<Spec, StatusFields>): CustomResource<Spec, StatusFields> {
  const ownReady = definition.printerColumns.some((column) => column.name === READY_COLUMN.name)
  const printerColumns = [...definition.printerColumns, ...(ownReady ? [] : [READY_COLUMN]), AGE_COLUMN]
  const twice = printerColumns.find((column, index) => printerColumns.findIndex((other) => other.name === column.name) !== index)
  if (twice !== undefined) {
    throw new DefinitionError(`${definition.kind}: two printer columns are named ${JSON.stringify(twice.name)}, and kubectl get would show both under one header (${AGE_COLUMN.name} is the time since creation, added to every resource): name one otherwise`)
  }
  return {
    ...definition,
    ...resourceNames(definition),
    statusSchema: Type.Object({ ...definition.status, ...CommonStatusProperties }),
    apiVersion: `${definition.group}/${definition.version}`,
    listKind: `${definition.kind}List`,
    printerColumns,
    parseSpec: specParser(definition.spec, definition.kind),
    observedStatus: statusReader(definition.status)
  }
}

function statusReader<StatusFields extends TProperties> (fields: StatusFields): (status: unknown) => ObservedStatus<StatusFields> {
  const checks = new Map(Object.entries(fields).map(([name, field]) => [name, TypeCompiler.Compile(field)]))
  return (status) => {
    if (typeof status !== 'object' || status === null) return {}
    // Each field is checked against its own schema, so one bad field does not hide the others.
    const observed: Record<string, unknown> = {}
    for (const name of Object.keys(status)) {
      const value = (status as Record<string, unknown>)[name]
      if (checks.get(name)?.Check(value) === true) observed[name] = value
    }
    return observed as ObservedStatus<StatusFields>
  }
}
