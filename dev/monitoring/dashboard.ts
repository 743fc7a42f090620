import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { GraphThresholdsStyleConfigBuilder, GraphThresholdsStyleMode, LegendDisplayMode, LegendPlacement, SortOrder, TooltipDisplayMode, VizLegendOptionsBuilder, VizTooltipOptionsBuilder } from '@grafana/grafana-foundation-sdk/common'
import { DashboardBuilder, DatasourceVariableBuilder, QueryVariableBuilder, RowBuilder, ThresholdsConfigBuilder, ThresholdsMode, VariableRefresh, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard'
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus'
import { PanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries'
import { parse } from 'yaml'
import { bytesRoundedUp, parseQuantity } from '../../hooks/bookstore/quantity.js'
import { WEBHOOK_TIMEOUT_SECONDS } from '../../hooks/framework/wire/webhook.js'
import { JOB, SLOW_CALL_SECONDS } from './alerts.js'

/**
 * The Grafana dashboard of manifests/monitoring/, built with Grafana's foundation SDK. `npm run generate` writes it as
 * dashboard.json, which the component ships in a ConfigMap for Grafana's dashboard sidecar; docs/monitoring.md says
 * what each panel shows.
 */

export const DASHBOARD_UID = 'metacontroller-hooks'

/** The Grafana variables the queries use, and what the end-to-end suite puts in their place to run them. */
export const QUERY_VARIABLES = { job: '$job', rateInterval: '$__rate_interval' } as const

const selector = `job=~"${QUERY_VARIABLES.job}"`
const rate = (metric: string, matchers = ''): string =>
  `rate(${metric}{${selector}${matchers === '' ? '' : `, ${matchers}`}}[${QUERY_VARIABLES.rateInterval}])`
const calls = 'metacontroller_hooks_duration_seconds_count'

/** The memory limit of the hook server's container, as manifests/server/deployment.yaml ships it, in bytes. */
function shippedMemoryLimit (): number {
  const deployment = parse(readFileSync(join(import.meta.dirname, '..', '..', 'manifests', 'server', 'deployment.yaml'), 'utf8'))
  const container = deployment.spec.template.spec.containers.find((c: { name: string }) => c.name === 'hooks')
  const quantity = parseQuantity(String(container.resources.limits.memory))
  if (quantity === undefined) throw new Error(`manifests/server/deployment.yaml: memory limit ${container.resources.limits.memory} is not a quantity`)
  return Number(bytesRoundedUp(quantity))
}

function query (expr: string, legend: string): DataqueryBuilder {
  return new DataqueryBuilder().expr(expr).legendFormat(legend)
}

/** Lines at the given values, in the given colours, over a base that stays green. */
function thresholdLines (lines: Array<[number, string]>): ThresholdsConfigBuilder {
  return new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute)
    .steps([{ value: null, color: 'green' }, ...lines.map(([value, color]) => ({ value, color }))])
}

const DATASOURCE = { type: 'prometheus', uid: '$datasource' }

function panel (title: string, description: string, unit: string, width: number): PanelBuilder {
  return new PanelBuilder().title(title).description(description).unit(unit).min(0).height(8).span(width)
    .datasource(DATASOURCE)
    .legend(new VizLegendOptionsBuilder().showLegend(true).displayMode(LegendDisplayMode.List).placement(LegendPlacement.Bottom))
    .tooltip(new VizTooltipOptionsBuilder().mode(TooltipDisplayMode.Multi).sort(SortOrder.Descending))
}

export function dashboard (): Dashboard {
  const memoryLimit = shippedMemoryLimit()
  return new DashboardBuilder('Metacontroller hooks')
    .uid(DASHBOARD_UID)
    .tags(['metacontroller-hooks'])
    .refresh('30s')
    .time({ from: 'now-3h', to: 'now' })
    .timezone('browser')
    .readonly()
    .withVariable(new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'))
    .withVariable(new QueryVariableBuilder('job').label('Job')
      .datasource(DATASOURCE)
      .query('label_values(metacontroller_hooks_duration_seconds_count, job)')
      .refresh(VariableRefresh.OnTimeRangeChanged)
      .current({ text: JOB, value: JOB }))
    .withRow(new RowBuilder('Hook calls'))
    .withPanel(panel('Calls by controller and hook', 'Hook calls per second, whatever their outcome.', 'reqps', 12)
      .withTarget(query(`sum by (controller, hook) (${rate(calls)})`, '{{controller}} {{hook}}')))
    .withPanel(panel('Failed calls by controller, hook and outcome',
      'Calls that gave Metacontroller no answer it could use, per second: error (500, a bug), rejected (4xx), aborted (Metacontroller closed the connection first, usually at its webhook timeout), overloaded (503, no memory for the body in time). Metacontroller retries each with backoff.', 'reqps', 12)
      .withTarget(query(`sum by (controller, hook, outcome) (${rate(calls, 'outcome=~"error|rejected|aborted|overloaded"')})`, '{{controller}} {{hook}} {{outcome}}')))
    .withPanel(panel('Latency against the webhook timeout',
      `Median, 90th and 99th percentile of hook call durations. Metacontroller abandons a call at ${WEBHOOK_TIMEOUT_SECONDS} s (red line); the slow-calls alert fires when the 99th percentile passes ${SLOW_CALL_SECONDS} s (orange line) for 10 minutes.`, 's', 12)
      .thresholds(thresholdLines([[SLOW_CALL_SECONDS, 'orange'], [WEBHOOK_TIMEOUT_SECONDS, 'red']]))
      .thresholdsStyle(new GraphThresholdsStyleConfigBuilder().mode(GraphThresholdsStyleMode.Dashed))
      .withTarget(query(`histogram_quantile(0.5, sum by (controller, hook, le) (${rate('metacontroller_hooks_duration_seconds_bucket')}))`, 'p50 {{controller}} {{hook}}'))
      .withTarget(query(`histogram_quantile(0.9, sum by (controller, hook, le) (${rate('metacontroller_hooks_duration_seconds_bucket')}))`, 'p90 {{controller}} {{hook}}'))
      .withTarget(query(`histogram_quantile(0.99, sum by (controller, hook, le) (${rate('metacontroller_hooks_duration_seconds_bucket')}))`, 'p99 {{controller}} {{hook}}')))
    .withPanel(panel('ETag hit ratio',
      'The share of sync calls answered 304 Not Modified: Metacontroller sent the request whose answer it kept, and the hook answered from the request\'s digest alone. Only the composites that answer from the request alone (BookStore, PodSet, PulsarConsumer) can; it needs Metacontroller v4.3 or later with the webhooks\' etag setting.', 'percentunit', 12)
      .max(1)
      .withTarget(query(`sum by (controller) (${rate(calls, 'hook="sync", outcome="not_modified"')})\n/\nsum by (controller) (${rate(calls, 'hook="sync"')})`, '{{controller}}')))
    .withRow(new RowBuilder('PostgresWriter'))
    .withPanel(panel('PostgresWriter answers by Ready reason',
      'PostgresWriter\'s answers per second by their Ready condition: RowWritten when the row matches the spec, DatabaseUnavailable while PostgreSQL cannot be reached, and the reasons docs/troubleshooting.md lists.', 'reqps', 8)
      .withTarget(query(`sum by (hook, ready, reason) (${rate('metacontroller_hooks_answers_total', 'controller="postgres-writer"')})`, '{{hook}} {{ready}} {{reason}}')))
    .withPanel(panel('PostgreSQL reachable', 'Per replica: 1 when its last database check (SELECT 1) answered, 0 when it did not.', 'bool', 8)
      .max(1)
      .withTarget(query(`metacontroller_hooks_database_up{${selector}}`, '{{pod}}')))
    .withPanel(panel('Drift repairs', 'Rows that a sync found changed or missing since the hook wrote them, and wrote again, per interval: someone or something edited the table.', 'short', 8)
      .withTarget(query(`sum by (controller, drift) (increase(metacontroller_hooks_drift_repairs_total{${selector}}[${QUERY_VARIABLES.rateInterval}]))`, '{{controller}} {{drift}}')))
    .withRow(new RowBuilder('Refusals and resources'))
    .withPanel(panel('Refusals by status code',
      'Hook calls refused per second, by HTTP status: 400 not a hook request, 401 bearer token, 408 body too slow, 413 body too large, 415 not JSON, 422 a resource the hook cannot answer, 503 no memory for the body in time.', 'reqps', 8)
      .withTarget(query(`sum by (controller, hook, code) (${rate('metacontroller_hooks_refusals_total')})`, '{{controller}} {{hook}} {{code}}')))
    .withPanel(panel('Not ready answers by reason',
      'Answers with Ready=False per second, by controller and reason: InvalidSpec is a stored spec the hook cannot use; the others are in docs/troubleshooting.md.', 'reqps', 8)
      .withTarget(query(`sum by (controller, reason) (${rate('metacontroller_hooks_answers_total', 'ready="False"')})`, '{{controller}} {{reason}}')))
    .withPanel(panel('Memory against the limit',
      `Resident memory of each replica, and V8's heap in use. The red line is the container's memory limit as manifests/server/deployment.yaml ships it (${memoryLimit / 2 ** 20} MiB): change it here too when you change the limit.`, 'bytes', 8)
      .thresholds(thresholdLines([[memoryLimit, 'red']]))
      .thresholdsStyle(new GraphThresholdsStyleConfigBuilder().mode(GraphThresholdsStyleMode.Dashed))
      .withTarget(query(`process_resident_memory_bytes{${selector}}`, 'resident {{pod}}'))
      .withTarget(query(`nodejs_heap_size_used_bytes{${selector}}`, 'heap used {{pod}}')))
    .build()
}

/** Every panel's title and queries, in the order of the dashboard. */
export function panelQueries (board: Dashboard): Array<{ title: string, exprs: string[] }> {
  return (board.panels ?? []).flatMap((item) => 'targets' in item
    ? [{ title: item.title ?? '', exprs: (item.targets ?? []).map((target) => (target as unknown as { expr: string }).expr) }]
    : [])
}
