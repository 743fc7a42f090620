import { WEBHOOK_TIMEOUT_SECONDS } from '../../hooks/framework/wire/webhook.js'

/**
 * The alerts of manifests/monitoring/prometheus-rule.yaml: what each watches, for how long, and what to do. Each
 * description says what to do first; each links to its section of docs/troubleshooting.md, which says the rest.
 * docs/monitoring.md explains the thresholds and durations; test/rules/ holds promtool's unit tests of every alert.
 */

/** The `job` label of the hook server's targets: the PodMonitor takes it from the pods' `app.kubernetes.io/name`. */
export const JOB = 'metacontroller-hooks'

/** Where each alert's section is: docs/troubleshooting.md, as the repository serves it. */
export const TROUBLESHOOTING = 'docs/troubleshooting.md'

/**
 * A hook call slower than this is close to Metacontroller's webhook timeout: half of it leaves room for the network,
 * for the body of a large parent, and for a retry that Metacontroller makes while the first call still runs.
 */
export const SLOW_CALL_SECONDS = WEBHOOK_TIMEOUT_SECONDS / 2

export type Severity = 'critical' | 'warning' | 'info'

export interface AlertRule {
  alert: string
  expr: string
  /** How long the expression must hold before the alert fires; absent: at the first evaluation that finds it. */
  for?: `${number}m`
  labels: { severity: Severity }
  annotations: {
    summary: string
    /** What happens, and what to do first; templates use `{{ $labels.<name> }}` only. */
    description: string
    runbook_url: string
  }
}

const job = `job="${JOB}"`

/** The section of docs/troubleshooting.md about an alert: a heading that is the alert's name. */
export function runbook (alert: string): string {
  return `${TROUBLESHOOTING}#${alert.toLowerCase()}`
}

/**
 * The series of a counter that grew over `window`, by `by`: `increase()`, and also a series that appeared within the
 * window, whose first sample `increase()` cannot see (prom-client creates a labelled series at its first count, at 1).
 */
function grewWithin (selector: string, window: string, by: string): string {
  return `sum by (${by}) (\n  (${selector} unless ${selector} offset ${window})\n  or\n  increase(${selector}[${window}])\n) > 0`
}

function alert (rule: Omit<AlertRule, 'annotations'> & { summary: string, description: string }): AlertRule {
  const { summary, description, ...rest } = rule
  return { ...rest, annotations: { summary, description, runbook_url: runbook(rule.alert) } }
}

export const ALERTS: readonly AlertRule[] = [
  alert({
    alert: 'MetacontrollerHooksDown',
    expr: `max by (job) (up{${job}}) == 0\nor\nabsent(up{${job}})`,
    for: '2m',
    labels: { severity: 'critical' },
    summary: 'No replica of the hook server answers Prometheus.',
    description: 'Every hook call of Metacontroller fails: no resource of the four controllers is reconciled, and PostgresWriter resources being deleted stay Terminating. Check the pods: kubectl -n metacontroller-hooks get pods,events, then the logs of the last one that ran.'
  }),
  alert({
    alert: 'MetacontrollerHooksReplicaDown',
    expr: `up{${job}} == 0`,
    for: '5m',
    labels: { severity: 'warning' },
    summary: 'Hook server replica {{ $labels.pod }} has not answered Prometheus for 5 minutes.',
    description: 'Its /metrics on the probe port does not answer: the process hangs or is gone, or a NetworkPolicy keeps Prometheus out. The other replica serves the hooks meanwhile. Check the pod with kubectl -n metacontroller-hooks describe pod {{ $labels.pod }}, and that the Prometheus namespace is labelled metacontroller-hooks/metrics-scraper=true.'
  }),
  alert({
    alert: 'MetacontrollerHooksNotReady',
    expr: `kube_pod_status_ready{condition="false"} == 1\nand on (namespace, pod)\nup{${job}}`,
    for: '5m',
    labels: { severity: 'warning' },
    summary: 'Hook server replica {{ $labels.pod }} has not been ready for 5 minutes.',
    description: 'Its Service sends it no hook call. The server is unready only while it drains after SIGTERM, which takes seconds, so a readiness probe that keeps failing means it does not answer in time: look at its CPU and memory, and at kubectl -n metacontroller-hooks describe pod {{ $labels.pod }}.'
  }),
  alert({
    alert: 'MetacontrollerHooksCallsFailing',
    expr: `sum by (controller, hook, outcome) (rate(metacontroller_hooks_duration_seconds_count{${job}, outcome=~"error|rejected|aborted"}[5m]))\n/ ignoring (outcome) group_left\nsum by (controller, hook) (rate(metacontroller_hooks_duration_seconds_count{${job}}[5m]))\n> 0.05`,
    for: '10m',
    labels: { severity: 'warning' },
    summary: 'More than 5% of {{ $labels.controller }} {{ $labels.hook }} calls end {{ $labels.outcome }}.',
    description: 'Metacontroller retries a failed call with backoff, so the resources concerned lag behind their specs. The hook server logs one line per call with its outcome and status code: kubectl -n metacontroller-hooks logs deploy/metacontroller-hooks | jq -c \'select(.controller == "{{ $labels.controller }}" and .outcome == "{{ $labels.outcome }}")\', and the resources carry SyncError events.'
  }),
  alert({
    alert: 'MetacontrollerHooksSlowCalls',
    expr: `histogram_quantile(0.99, sum by (controller, hook, le) (rate(metacontroller_hooks_duration_seconds_bucket{${job}}[5m])))\n> ${SLOW_CALL_SECONDS}`,
    for: '10m',
    labels: { severity: 'warning' },
    summary: `The slowest 1% of {{ $labels.controller }} {{ $labels.hook }} calls take more than ${SLOW_CALL_SECONDS} s, half of Metacontroller's ${WEBHOOK_TIMEOUT_SECONDS} s webhook timeout.`,
    description: `Calls that pass ${WEBHOOK_TIMEOUT_SECONDS} s are abandoned by Metacontroller and retried, so the resources lag behind. Look at the latency panel of the dashboard: one controller slow (PostgresWriter waits for PostgreSQL), or all of them (CPU throttling, memory pressure, very large parents).`
  }),
  alert({
    alert: 'MetacontrollerHooksDatabaseDown',
    expr: `metacontroller_hooks_database_up{${job}} == 0`,
    for: '5m',
    labels: { severity: 'critical' },
    summary: 'Hook server replica {{ $labels.pod }} has not reached PostgreSQL for 5 minutes.',
    description: 'PostgresWriter answers Ready=False, reason DatabaseUnavailable, writes no row and deletes none: resources being deleted stay Terminating. The other controllers are unaffected. Check PostgreSQL and the DATABASE_URL of the secret metacontroller-hooks-database; the server logs the driver\'s reason once, as "database unreachable".'
  }),
  alert({
    alert: 'MetacontrollerHooksInvalidSpec',
    expr: grewWithin(`metacontroller_hooks_answers_total{${job}, reason="InvalidSpec"}`, '15m', 'controller'),
    labels: { severity: 'warning' },
    summary: 'The {{ $labels.controller }} hook answered a resource InvalidSpec in the last 15 minutes.',
    description: 'A resource holds a stored spec the hook cannot use: nothing it manages is created, changed or deleted until it is fixed. Its Ready condition names each bad field; the runbook lists the resources of a kind that say so. Fix those fields.'
  }),
  alert({
    alert: 'MetacontrollerHooksObjectsRefused',
    expr: grewWithin(`metacontroller_hooks_refusals_total{${job}, code="422"}`, '30m', 'controller, hook'),
    labels: { severity: 'warning' },
    summary: 'The {{ $labels.controller }} {{ $labels.hook }} hook refused a resource (422) in the last 30 minutes.',
    description: 'A resource whose name cannot be used, or whose spec cannot be used while a child cannot be kept as it is: Metacontroller shows the message in a SyncError event on it and retries with backoff, and nothing changes until it is fixed. Find it with kubectl get events -A --field-selector reason=SyncError.'
  }),
  alert({
    alert: 'MetacontrollerHooksSlowClientsRefused',
    expr: `sum by (code) (rate(metacontroller_hooks_refusals_total{${job}, code=~"408|503"}[5m])) * 60 > 1`,
    for: '10m',
    labels: { severity: 'warning' },
    summary: 'The hook server has refused more than one call a minute with {{ $labels.code }} for 10 minutes.',
    description: '408: request bodies arrive too slowly or stall, which Metacontroller never does on a healthy network: a network problem between it and the hook server, or a client that holds connections open on purpose. 503: more large bodies arrive at once than the server\'s memory for bodies takes. Metacontroller retries both; look at the refusals panel of the dashboard and the server\'s "request refused" log lines.'
  }),
  alert({
    alert: 'MetacontrollerHooksDriftRepaired',
    expr: grewWithin(`metacontroller_hooks_drift_repairs_total{${job}}`, '1h', 'controller, drift'),
    labels: { severity: 'info' },
    summary: 'The {{ $labels.controller }} hook repaired {{ $labels.drift }} rows in the last hour.',
    description: 'Something outside the hook changed or deleted rows it wrote, and a sync wrote them again. Nothing is wrong now; if it keeps happening, find who edits the table by hand. The resource\'s status.lastDriftRepair says which row and when.'
  })
]

/** The PrometheusRule of manifests/monitoring/. */
export function prometheusRule (): Record<string, unknown> {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: 'metacontroller-hooks',
      namespace: 'metacontroller-hooks',
      labels: { 'app.kubernetes.io/part-of': 'metacontroller-hooks' }
    },
    spec: { groups: [{ name: 'metacontroller-hooks', rules: ALERTS }] }
  }
}
