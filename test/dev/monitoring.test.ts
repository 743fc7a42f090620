import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { parse, parseAllDocuments } from 'yaml'
import { JOB } from '../../dev/monitoring/alerts.js'
import { monitoringManifests } from '../../dev/monitoring/manifests.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { runnable, selected, shippedAlerts, shippedPanels } from '../helpers/monitoring.js'
import { admin, callHook, request } from '../postgres-writer/calls.js'
import { ALERT_CASES } from '../rules/alert-cases.js'

/**
 * The monitoring component (manifests/monitoring/, generated from dev/monitoring/): committed as generated, scraping
 * what the NetworkPolicy opens, every alert documented and tested, and every metric and label its alerts and panels
 * use served by the real /metrics.
 */

const root = join(import.meta.dirname, '..', '..')
const read = (path: string): string => readFileSync(join(root, path), 'utf8')

test('the committed PrometheusRule and dashboard are what `npm run generate` generates', () => {
  for (const [path, content] of monitoringManifests()) {
    assert.equal(read(`manifests/${path}`), content, `manifests/${path} is stale: run \`npm run generate\` and commit the result`)
  }
})

test('the PodMonitor scrapes the pods and the port the NetworkPolicy opens to scrapers, as the alerts\' job', () => {
  const podMonitor = parse(read('manifests/monitoring/pod-monitor.yaml'))
  const policy = parse(read('manifests/server/network-policy.yaml'))
  const deployment = parse(read('manifests/server/deployment.yaml'))
  const scrapers = policy.spec.ingress.find((rule: any) => rule.from.some((from: any) => from.namespaceSelector?.matchLabels?.['metacontroller-hooks/metrics-scraper'] === 'true'))
  assert.ok(scrapers !== undefined, 'the NetworkPolicy has a rule for metrics scrapers')
  assert.deepEqual(podMonitor.spec.selector, policy.spec.podSelector)
  assert.equal(podMonitor.metadata.namespace, policy.metadata.namespace)
  assert.deepEqual(podMonitor.spec.podMetricsEndpoints.map((endpoint: any) => endpoint.port), scrapers.ports.map((port: any) => port.port))
  assert.equal(podMonitor.spec.podMetricsEndpoints[0].path, '/metrics')
  const pod = deployment.spec.template
  assert.equal(pod.metadata.labels[podMonitor.spec.jobLabel], JOB, 'the job label the alerts select')
  const container = pod.spec.containers.find((c: any) => c.name === 'hooks')
  const probes = container.ports.find((port: any) => port.name === podMonitor.spec.podMetricsEndpoints[0].port)
  assert.equal(String(probes.containerPort), container.env.find((env: any) => env.name === 'HOOKS_PROBE_PORT').value, 'the port serves HOOKS_PROBE_PORT')
})

test('the component renders a PodMonitor, the PrometheusRule and the labelled dashboard ConfigMap', () => {
  const kustomization = parse(read('manifests/monitoring/kustomization.yaml'))
  assert.equal(kustomization.kind, 'Component')
  const generator = kustomization.configMapGenerator[0]
  assert.equal(generator.options.labels.grafana_dashboard, '1', 'the label kube-prometheus-stack\'s Grafana sidecar watches')
  assert.deepEqual(generator.files, ['dashboard.json'])
  assert.equal(parseAllDocuments(read('manifests/monitoring/prometheus-rule.yaml')).length, 1)
})

/** GitHub's anchor of each heading of a Markdown page. */
function anchors (page: string): Set<string> {
  return new Set([...page.matchAll(/^#+ (.+)$/gm)].map(([, heading]) => (heading as string).toLowerCase().replaceAll(/[^a-z0-9 -]/g, '').replaceAll(' ', '-')))
}

test('every alert has a summary, a description and a link to its section of docs/troubleshooting.md, and is in docs/monitoring.md', () => {
  const troubleshooting = anchors(read('docs/troubleshooting.md'))
  const monitoring = read('docs/monitoring.md')
  for (const rule of shippedAlerts()) {
    const { summary, description, runbook_url: runbook } = rule.annotations
    assert.ok(summary.length > 20 && description.length > 80, `${rule.alert}: a summary and a description that says what to do`)
    const [page, anchor] = runbook.split('#')
    assert.equal(page, 'docs/troubleshooting.md', rule.alert)
    assert.ok(troubleshooting.has(anchor as string), `${rule.alert}: docs/troubleshooting.md has no section #${anchor}`)
    for (const text of [summary, description]) {
      const templates = [...text.matchAll(/\{\{.*?\}\}/g)].map(([template]) => template)
      assert.deepEqual(templates.filter((template) => !/^\{\{ \$labels\.\w+ \}\}$/.test(template)), [], `${rule.alert}: only {{ $labels.<name> }} templates`)
    }
    assert.match(monitoring, new RegExp(`^### ${rule.alert}$`, 'm'), `docs/monitoring.md explains ${rule.alert}`)
    assert.ok(['critical', 'warning', 'info'].includes(rule.labels.severity), rule.alert)
  }
})

test('every alert has promtool cases where it fires and where it stays silent', () => {
  const alerts = shippedAlerts().map((rule) => rule.alert)
  assert.deepEqual(Object.keys(ALERT_CASES).sort(), [...alerts].sort(), 'test/rules/alert-cases.ts covers exactly the shipped alerts')
  for (const [alert, cases] of Object.entries(ALERT_CASES)) {
    assert.ok(cases.some((test) => test.fires.length > 0), `${alert} fires in a case`)
    assert.ok(cases.some((test) => test.fires.length === 0), `${alert} stays silent in a case`)
  }
})

test('every panel of the dashboard is in docs/monitoring.md', () => {
  const monitoring = read('docs/monitoring.md')
  for (const panel of shippedPanels()) assert.match(monitoring, new RegExp(`^### ${panel.title}$`, 'm'), `docs/monitoring.md explains the panel "${panel.title}"`)
})

/** Labels that Prometheus (job, instance) and the PodMonitor (namespace, pod) put on every scraped series. */
const TARGET_LABELS = new Set(['job', 'instance', 'namespace', 'pod'])
/** Series that do not come from the hook server: Prometheus's own per target, and kube-state-metrics'. */
const ELSEWHERE = new Set(['up', 'kube_pod_status_ready'])

interface Family { help: string, labels: Map<string, Set<string>> }

/** /metrics as families of samples: each metric name's HELP text (a histogram's series take their family's) and labels. */
function families (metrics: string): Map<string, Family> {
  const helps = new Map([...metrics.matchAll(/^# HELP (\w+) (.*)$/gm)].map(([, name, help]) => [name as string, help as string]))
  const found = new Map<string, Family>()
  for (const [, name, labels] of metrics.matchAll(/^(\w+)(?:\{(.*)\})? \S+$/gm)) {
    const family = found.get(name as string) ?? { help: helps.get(name as string) ?? helps.get((name as string).replace(/_(bucket|count|sum)$/, '')) ?? '', labels: new Map() }
    for (const [, label, value] of (labels ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      family.labels.set(label as string, (family.labels.get(label as string) ?? new Set()).add(value as string))
    }
    found.set(name as string, family)
  }
  return found
}

test('every metric, label and label value an alert or a panel selects is on /metrics of the real server', async (t) => {
  const built = await build(t)
  const sync = async (controller: string, body: unknown, etag?: string): Promise<{ statusCode: number, etag: unknown }> => {
    const response = await built.app.inject({ method: 'POST', url: `/${controller}/sync`, headers: { 'content-type': 'application/json', ...(etag === undefined ? {} : { 'if-none-match': etag }) }, payload: typeof body === 'string' ? body : JSON.stringify(body) })
    return { statusCode: response.statusCode, etag: response.headers.etag }
  }
  // The calls that make the series the alerts and panels select: an answer and a refusal of every kind they name
  // that a test can ask for, a 304, and a drift repair.
  const invalid = fixture('podset', 'invalid-spec')
  assert.equal((await sync('podset', invalid)).statusCode, 200)
  const unkept = structuredClone(invalid)
  delete Object.values<any>(unkept.children['Pod.v1'])[0].metadata.annotations
  assert.equal((await sync('podset', unkept)).statusCode, 422)
  assert.equal((await sync('podset', '')).statusCode, 400)
  const steady = fixture('podset', 'steady-state')
  const { etag } = await sync('podset', steady)
  assert.equal((await sync('podset', steady, String(etag))).statusCode, 304)
  const created = await callHook(built, request('sync-create'))
  await admin(built, 'UPDATE students SET age = 99')
  assert.equal((await callHook(built, request('sync-resync', { status: created.json.status }))).statusCode, 200)

  const served = families((await built.app.inject({ url: '/metrics' })).body)
  const uses = [
    ...shippedAlerts().map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr })),
    ...shippedPanels().flatMap((panel) => panel.exprs.map((expr) => ({ where: `panel "${panel.title}"`, expr: runnable(expr, JOB, '5m') })))
  ]
  const missing: string[] = []
  for (const { where, expr } of uses) {
    const { selectors, grouping } = selected(expr)
    const own = selectors.filter((selector) => !ELSEWHERE.has(selector.metric))
    for (const { metric, matchers } of own) {
      const family = served.get(metric)
      if (family === undefined) {
        missing.push(`${where}: no metric ${metric}`)
        continue
      }
      for (const { label, op, value } of matchers.filter((matcher) => !TARGET_LABELS.has(matcher.label))) {
        const values = family.labels.get(label)
        if (values === undefined) {
          missing.push(`${where}: ${metric} has no label ${label}`)
          continue
        }
        // A value the calls above cannot provoke (a 500, a 503) must at least be one the metric's HELP names.
        const named = op === '=' ? [value] : op === '=~' ? value.split('|') : []
        for (const name of named.filter((name) => !values.has(name) && !new RegExp(`\\b${name}\\b`).test(family.help))) {
          missing.push(`${where}: ${metric} never has ${label}="${name}", and its HELP does not name it`)
        }
      }
    }
    const labels = new Set(own.flatMap(({ metric }) => [...served.get(metric)?.labels.keys() ?? []]))
    const external = selectors.length > own.length
    for (const label of grouping.filter((label) => !TARGET_LABELS.has(label) && !labels.has(label) && !external)) {
      missing.push(`${where}: groups by ${label}, which none of its metrics has`)
    }
  }
  assert.deepEqual([...new Set(missing)], [], 'a metric or label was renamed or removed from /metrics: change the alerts (dev/monitoring/alerts.ts) and the dashboard (dev/monitoring/dashboard.ts) with it')
})
