import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
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

export interface CustomResourceDefinition<Spec extends TObject, StatusFields extends TProperties> {
  group: string
  version: string
  kind: string
  shortNames?: string[]
  /** The spec as the hook sees it: a field with a default is required here, and optional in the CRD. */
  spec: Spec
  /** The controller's own status fields; `observedGeneration` and `conditions` follow them. */
  status: StatusFields
  /** The resource's own columns; Ready (the condition's status, unless one of these is named Ready) and Age follow. */
  printerColumns: PrinterColumn[]
  name?: NameRule
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
 * A custom resource from its group, version, kind and schemas: names, the common status fields, the Ready and Age
 * columns and the parsers derived.
 */
export function customResource<Spec extends TObject, StatusFields extends TProperties> (definition: CustomResourceDefinition<Spec, StatusFields>): CustomResource<Spec, StatusFields> {
  const lowercase = definition.kind.toLowerCase()
  const ownReady = definition.printerColumns.some((column) => column.name === READY_COLUMN.name)
  return {
    ...definition,
    statusSchema: Type.Object({ ...definition.status, ...CommonStatusProperties }),
    apiVersion: `${definition.group}/${definition.version}`,
    plural: `${lowercase}s`,
    singular: lowercase,
    listKind: `${definition.kind}List`,
    printerColumns: [...definition.printerColumns, ...(ownReady ? [] : [READY_COLUMN]), AGE_COLUMN],
    parseSpec: specParser(definition.spec, definition.kind),
    observedStatus: statusReader(definition.status)
  }
}

function statusReader<StatusFields extends TProperties> (fields: StatusFields): (status: unknown) => ObservedStatus<StatusFields> {
  const checks = new Map(Object.entries(fields).map(([name, field]) => [name, TypeCompiler.Compile(field)]))
  return (status) => {
    if (typeof status !== 'object' || status === null) return {}
    // Each field is checked against its own schema, so one bad field does not hide the others.
    return Object.fromEntries(Object.entries(status).filter(([name, value]) => checks.get(name)?.Check(value) === true)) as ObservedStatus<StatusFields>
  }
}
