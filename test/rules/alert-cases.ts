import { JOB, type AlertRule } from '../../dev/monitoring/alerts.js'

/**
 * promtool's unit tests of every alert of dev/monitoring/alerts.ts, as cases: input series (promtool's expanding
 * notation: `0+60x30` is 31 samples from 0, adding 60 each; `_` is a missing sample), an evaluation time, and the
 * labels of each alert expected to fire then (none: the alert must stay silent). `promtoolTests` turns them into
 * promtool's test file, the expected annotations rendered from the rule with each alert's labels.
 */

export interface AlertCase {
  name: string
  /** Series (with their labels) and their samples, one a minute. */
  series: Record<string, string>
  /** promtool's eval_time. */
  at: string
  /** The labels of each firing alert, besides `alertname` and `severity`; empty: the alert is silent. */
  fires: Array<Record<string, string>>
}

const hooks = `job="${JOB}", namespace="metacontroller-hooks"`
const pod = (name: string): Record<string, string> => ({ job: JOB, namespace: 'metacontroller-hooks', pod: `metacontroller-hooks-${name}` })
const calls = (labels: string): string => `metacontroller_hooks_duration_seconds_count{${hooks}, pod="metacontroller-hooks-a", controller="podset", hook="sync", ${labels}}`
const bucket = (le: string): string => `metacontroller_hooks_duration_seconds_bucket{${hooks}, pod="metacontroller-hooks-a", controller="postgres-writer", hook="sync", outcome="ok", le="${le}"}`
const answers = `metacontroller_hooks_answers_total{${hooks}, pod="metacontroller-hooks-a", controller="podset", hook="sync", ready="False", reason="InvalidSpec"}`
const refusals = (code: string): string => `metacontroller_hooks_refusals_total{${hooks}, pod="metacontroller-hooks-a", controller="bookstore", hook="sync", code="${code}"}`
const repairs = `metacontroller_hooks_drift_repairs_total{${hooks}, pod="metacontroller-hooks-a", controller="postgres-writer", drift="changed"}`

export const ALERT_CASES: Record<string, AlertCase[]> = {
  MetacontrollerHooksDown: [
    { name: 'both replicas down for 3 minutes', series: { [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '0x10', [`up{${hooks}, pod="metacontroller-hooks-b"}`]: '0x10' }, at: '3m', fires: [{ job: JOB }] },
    { name: 'no target at all, as when the PodMonitor selects nothing', series: { 'up{job="other"}': '1x10' }, at: '3m', fires: [{ job: JOB }] },
    { name: 'both down for 1 minute only', series: { [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '0x10' }, at: '1m', fires: [] },
    { name: 'one replica of two up', series: { [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '0x10', [`up{${hooks}, pod="metacontroller-hooks-b"}`]: '1x10' }, at: '5m', fires: [] }
  ],
  MetacontrollerHooksReplicaDown: [
    { name: 'a replica down from 2m on', series: { [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '1 1 0x10', [`up{${hooks}, pod="metacontroller-hooks-b"}`]: '1x12' }, at: '8m', fires: [pod('a')] },
    { name: 'a replica down for 4 minutes, then back', series: { [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '1 0 0 0 0 1x10' }, at: '8m', fires: [] }
  ],
  MetacontrollerHooksNotReady: [
    {
      name: 'a hook server pod not ready for 6 minutes',
      series: {
        'kube_pod_status_ready{job="kube-state-metrics", namespace="metacontroller-hooks", pod="metacontroller-hooks-a", condition="false"}': '1x10',
        'kube_pod_status_ready{job="kube-state-metrics", namespace="metacontroller-hooks", pod="metacontroller-hooks-a", condition="true"}': '0x10',
        [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '1x10'
      },
      at: '6m',
      fires: [{ job: 'kube-state-metrics', namespace: 'metacontroller-hooks', pod: 'metacontroller-hooks-a', condition: 'false' }]
    },
    {
      name: 'another application\'s pod not ready',
      series: {
        'kube_pod_status_ready{job="kube-state-metrics", namespace="shop", pod="web-a", condition="false"}': '1x10',
        [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '1x10'
      },
      at: '8m',
      fires: []
    },
    {
      name: 'not ready for 30 seconds while draining',
      series: {
        'kube_pod_status_ready{job="kube-state-metrics", namespace="metacontroller-hooks", pod="metacontroller-hooks-a", condition="false"}': '0 0 1 0x10',
        [`up{${hooks}, pod="metacontroller-hooks-a"}`]: '1x10'
      },
      at: '8m',
      fires: []
    }
  ],
  MetacontrollerHooksCallsFailing: [
    { name: '1 call in 11 rejected for 20 minutes', series: { [calls('outcome="ok"')]: '0+60x30', [calls('outcome="rejected"')]: '0+6x30' }, at: '20m', fires: [{ controller: 'podset', hook: 'sync', outcome: 'rejected' }] },
    { name: '1 call in 31 rejected', series: { [calls('outcome="ok"')]: '0+60x30', [calls('outcome="rejected"')]: '0+2x30' }, at: '20m', fires: [] },
    { name: 'most calls not ready, which is an answer', series: { [calls('outcome="ok"')]: '0+6x30', [calls('outcome="not_ready"')]: '0+60x30' }, at: '20m', fires: [] },
    { name: '1 call in 11 a 500 for 5 minutes only', series: { [calls('outcome="ok"')]: '0+60x30', [calls('outcome="error"')]: '0x24 0+6x6' }, at: '29m', fires: [] }
  ],
  MetacontrollerHooksSlowCalls: [
    {
      name: '1 call in 10 between 5 and 10 s for 20 minutes',
      series: { [bucket('2.5')]: '0+90x30', [bucket('5')]: '0+90x30', [bucket('10')]: '0+100x30', [bucket('+Inf')]: '0+100x30' },
      at: '20m',
      fires: [{ controller: 'postgres-writer', hook: 'sync' }]
    },
    {
      name: 'every call under 5 s',
      series: { [bucket('2.5')]: '0+90x30', [bucket('5')]: '0+100x30', [bucket('10')]: '0+100x30', [bucket('+Inf')]: '0+100x30' },
      at: '20m',
      fires: []
    }
  ],
  MetacontrollerHooksDatabaseDown: [
    { name: 'PostgreSQL unreachable from 2m on', series: { [`metacontroller_hooks_database_up{${hooks}, pod="metacontroller-hooks-a"}`]: '1 1 0x10' }, at: '8m', fires: [pod('a')] },
    { name: 'PostgreSQL unreachable for 4 minutes, as in a failover', series: { [`metacontroller_hooks_database_up{${hooks}, pod="metacontroller-hooks-a"}`]: '1 0 0 0 0 1x10' }, at: '8m', fires: [] },
    { name: 'unreachable for 4 minutes so far', series: { [`metacontroller_hooks_database_up{${hooks}, pod="metacontroller-hooks-a"}`]: '1 0x10' }, at: '5m', fires: [] }
  ],
  MetacontrollerHooksInvalidSpec: [
    { name: 'a first InvalidSpec answer: a new series at 1', series: { [answers]: '_x20 1x40' }, at: '22m', fires: [{ controller: 'podset' }] },
    { name: 'InvalidSpec answers on every resync', series: { [answers]: '1+1x60' }, at: '50m', fires: [{ controller: 'podset' }] },
    { name: 'the last InvalidSpec answer 20 minutes ago', series: { [answers]: '_x20 1x40' }, at: '45m', fires: [] }
  ],
  MetacontrollerHooksObjectsRefused: [
    { name: 'a first 422', series: { [refusals('422')]: '_x10 1x60' }, at: '12m', fires: [{ controller: 'bookstore', hook: 'sync' }] },
    { name: 'a 422 on each retry, 16 minutes apart', series: { [refusals('422')]: '1x15 2x15 3x15 4x15' }, at: '58m', fires: [{ controller: 'bookstore', hook: 'sync' }] },
    { name: 'the last 422 40 minutes ago', series: { [refusals('422')]: '_x10 1x60' }, at: '50m', fires: [] },
    { name: '400s only', series: { [refusals('400')]: '0+5x60' }, at: '30m', fires: [] }
  ],
  MetacontrollerHooksSlowClientsRefused: [
    { name: 'two 408s a minute for 20 minutes', series: { [refusals('408')]: '0+2x30' }, at: '20m', fires: [{ code: '408' }] },
    { name: 'two 503s a minute for 20 minutes', series: { [refusals('503')]: '0+2x30' }, at: '20m', fires: [{ code: '503' }] },
    { name: 'one 408 every two minutes', series: { [refusals('408')]: '0+1x15' }, at: '25m', fires: [] },
    { name: 'a burst of 503s, 30 in 3 minutes', series: { [refusals('503')]: '0x5 10 20 30x20' }, at: '20m', fires: [] },
    { name: 'two 422s a minute', series: { [refusals('422')]: '0+2x30' }, at: '20m', fires: [] }
  ],
  MetacontrollerHooksDriftRepaired: [
    { name: 'a row repaired 10 minutes ago', series: { [repairs]: '1x50 2x20' }, at: '60m', fires: [{ controller: 'postgres-writer', drift: 'changed' }] },
    { name: 'a first repair', series: { [repairs]: '_x10 1x10' }, at: '12m', fires: [{ controller: 'postgres-writer', drift: 'changed' }] },
    { name: 'no repair for over an hour', series: { [repairs]: '3x100' }, at: '90m', fires: [] }
  ]
}

/** An annotation as Prometheus renders it for an alert with these labels (the annotations use `{{ $labels.<name> }}` only). */
export function rendered (template: string, labels: Record<string, string>): string {
  return template.replaceAll(/\{\{ \$labels\.(\w+) \}\}/g, (_, name: string) => {
    const value = labels[name]
    if (value === undefined) throw new Error(`the annotation names $labels.${name}, which the case's alert lacks: ${template}`)
    return value
  })
}

/** promtool's test file for the cases of `rule`, against the rule file `ruleFile`. */
export function promtoolTests (rule: AlertRule, ruleFile: string): Record<string, unknown> {
  return {
    rule_files: [ruleFile],
    evaluation_interval: '1m',
    tests: (ALERT_CASES[rule.alert] ?? []).map((test) => ({
      name: `${rule.alert}: ${test.name}`,
      interval: '1m',
      input_series: Object.entries(test.series).map(([series, values]) => ({ series, values })),
      alert_rule_test: [{
        eval_time: test.at,
        alertname: rule.alert,
        exp_alerts: test.fires.map((labels) => ({
          exp_labels: { ...labels, severity: rule.labels.severity },
          exp_annotations: Object.fromEntries(Object.entries(rule.annotations).map(([name, text]) => [name, rendered(text, labels)]))
        }))
      }]
    }))
  }
}
