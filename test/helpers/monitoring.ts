import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parser } from '@prometheus-io/lezer-promql'
import { parse } from 'yaml'
import type { AlertRule } from '../../dev/monitoring/alerts.js'
import { QUERY_VARIABLES } from '../../dev/monitoring/dashboard.js'

/**
 * The monitoring component as shipped (manifests/monitoring/): its rule groups and its dashboard's queries, read from
 * the committed files, and what a PromQL expression selects, read with Prometheus's own PromQL grammar.
 */

const component = join(import.meta.dirname, '..', '..', 'manifests', 'monitoring')

export interface RuleGroup { name: string, rules: AlertRule[] }

/** The PrometheusRule's groups: a Prometheus rule file's content. */
export function shippedRuleGroups (): RuleGroup[] {
  return parse(readFileSync(join(component, 'prometheus-rule.yaml'), 'utf8')).spec.groups
}

export function shippedAlerts (): AlertRule[] {
  return shippedRuleGroups().flatMap((group) => group.rules)
}

export interface Panel { title: string, exprs: string[] }

/** Every panel of the committed dashboard with its queries, rows left out. */
export function shippedPanels (): Panel[] {
  const dashboard = JSON.parse(readFileSync(join(component, 'dashboard.json'), 'utf8')) as { panels: Array<{ title: string, targets?: Array<{ expr: string }> }> }
  return dashboard.panels.filter((panel) => panel.targets !== undefined).map((panel) => ({ title: panel.title, exprs: (panel.targets ?? []).map((target) => target.expr) }))
}

/** A dashboard query as Prometheus runs it: the dashboard's variables replaced by a job and a range. */
export function runnable (expr: string, job: string, range: string): string {
  return expr.replaceAll(QUERY_VARIABLES.rateInterval, range).replaceAll(QUERY_VARIABLES.job, job)
}

export interface Matcher { label: string, op: string, value: string }
export interface Selector { metric: string, matchers: Matcher[] }
export interface Selected {
  selectors: Selector[]
  /** The labels of by, without, on and ignoring clauses. */
  grouping: string[]
}

/** What an expression selects; throws when it does not parse. */
export function selected (expr: string): Selected {
  const tree = parser.parse(expr)
  const text = (node: { from: number, to: number }): string => expr.slice(node.from, node.to)
  const selectors: Selector[] = []
  const grouping: string[] = []
  const errors: string[] = []
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`at ${node.from}: ${JSON.stringify(expr.slice(Math.max(0, node.from - 20), node.to + 20))}`)
      if (node.name === 'VectorSelector') {
        const metric = node.node.getChild('Identifier')
        const matchers = node.node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []
        selectors.push({
          metric: metric === null ? '' : text(metric),
          matchers: matchers.map((matcher) => ({
            label: text(matcher.getChild('LabelName') ?? matcher),
            op: text(matcher.getChild('MatchOp') ?? matcher),
            value: JSON.parse(text(matcher.getChild('StringLiteral') ?? matcher)) as string
          }))
        })
      }
      if (node.name === 'GroupingLabels') grouping.push(...node.node.getChildren('LabelName').map(text))
    }
  })
  if (errors.length > 0) throw new Error(`${expr} does not parse: ${errors.join('; ')}`)
  return { selectors, grouping }
}
