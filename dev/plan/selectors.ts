/**
 * Kubernetes label selectors as Metacontroller evaluates them (metav1.LabelSelectorAsSelector): an absent selector
 * matches everything, as does an empty one; each `matchLabels` entry and each expression must hold. An annotation
 * selector is the same over annotations.
 */

export interface SelectorRequirement {
  key: string
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'
  values?: string[]
}

export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: SelectorRequirement[]
}

export interface AnnotationSelector {
  matchAnnotations?: Record<string, string>
  matchExpressions?: SelectorRequirement[]
}

/** A selector Metacontroller would refuse to convert: its controller then does not start. */
export class SelectorError extends Error {}

function requirementHolds ({ key, operator, values = [] }: SelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, key)
  switch (operator) {
    case 'In':
      if (values.length === 0) throw new SelectorError(`${key} In needs values`)
      return has && values.includes(labels[key] as string)
    case 'NotIn':
      if (values.length === 0) throw new SelectorError(`${key} NotIn needs values`)
      return !has || !values.includes(labels[key] as string)
    case 'Exists':
      return has
    case 'DoesNotExist':
      return !has
    default:
      throw new SelectorError(`${key}: unknown operator ${String(operator)}`)
  }
}

/** Whether `labels` match `selector`; undefined matches everything. */
export function selects (selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined || selector === null) return true
  const set = labels ?? {}
  return Object.entries(selector.matchLabels ?? {}).every(([key, value]) => set[key] === value) &&
    (selector.matchExpressions ?? []).every((requirement) => requirementHolds(requirement, set))
}

/** Whether `annotations` match `selector`; undefined matches everything. */
export function selectsAnnotations (selector: AnnotationSelector | undefined, annotations: Record<string, string> | undefined): boolean {
  if (selector === undefined || selector === null) return true
  return selects({ ...(selector.matchAnnotations === undefined ? {} : { matchLabels: selector.matchAnnotations }), ...(selector.matchExpressions === undefined ? {} : { matchExpressions: selector.matchExpressions }) }, annotations)
}
