/**
 * The monitoring component on a real Prometheus (built from the Prometheus Go module by
 * scripts/build-e2e-binaries.sh), scraping the suite's hook server on its probe port as the PodMonitor does, with the
 * shipped rules: every dashboard panel's queries return series once the cluster has run, and each alert that the
 * suite can cause goes pending, then fires once its `for:` has passed. The shipped `for:` durations are production
 * ones (minutes); Prometheus loads the shipped rule file with each `for:` divided by FOR_SCALE, scrapes and evaluates
 * every second, and the rest of every rule is as shipped. The time each alert took is printed and kept in
 * <logs>/alert-timings.json. Run with `npm run test:e2e`.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import { JOB } from '../../dev/monitoring/alerts.js'
import { fixture } from '../helpers/fixtures.js'
import { runnable, shippedPanels, shippedRuleGroups } from '../helpers/monitoring.js'
import { slowBody } from '../helpers/slow-body.js'
import { startEnvironment, type Environment } from './environment.js'
import { startPrometheus, type Alert, type Prometheus } from './rig/prometheus.js'
import { assertReady, Scenario, storeRefusedSpec } from './scenario.js'

/** The e2e Prometheus's `for:` is the shipped one divided by this: 5m is 15 s, 10m 30 s. */
const FOR_SCALE = 20
/** Scrape and evaluation interval of the e2e Prometheus, in seconds. */
const INTERVAL_SECONDS = 1
/** HOOKS_BODY_TIMEOUT of the suite's hook server: a stalled body is refused 408 after it, a slow call past the 5 s threshold. */
const BODY_TIMEOUT_SECONDS = 6
/** The range the dashboard's `$__rate_interval` stands for here. */
const RATE_INTERVAL = '30s'
/** Labels the PodMonitor puts on the hook server's series in a cluster. */
const TARGET = { namespace: 'metacontroller-hooks', pod: 'metacontroller-hooks-e2e' }

const root = join(import.meta.dirname, '..', '..')
const binDir = process.env.E2E_BIN_DIR ?? join(root, '.cache', 'e2e-bin')

/** The shipped rule groups, each `for:` divided by FOR_SCALE. */
function scaledRuleGroups (): unknown[] {
  return shippedRuleGroups().map((group) => ({
    ...group,
    rules: group.rules.map((rule) => rule.for === undefined ? rule : { ...rule, for: `${scaledFor(rule.for)}s` })
  }))
}

function scaledFor (shipped: string | undefined): number {
  if (shipped === undefined) return 0
  const minutes = /^(\d+)m$/.exec(shipped)?.[1]
  assert.ok(minutes !== undefined, `a for: of ${shipped}: the suite scales minutes only`)
  return Number(minutes) * 60 / FOR_SCALE
}

interface Timing {
  alert: string
  labels: Record<string, string>
  /** What the test did to cause it. */
  cause: string
  forSeconds: number
  /** Seconds from the cause to pending (firing at once when the rule has no `for:`), then to firing. */
  pending: number
  firing: number
  /** Seconds from the cause's end to the alert's end, for the alerts the suite clears. */
  cleared?: number
}

let environment: Environment | undefined
let prometheus: Prometheus | undefined
const timings: Timing[] = []

function env (): Environment {
  assert.ok(environment !== undefined, 'the end-to-end environment did not start')
  return environment
}

function prom (): Prometheus {
  assert.ok(prometheus !== undefined, 'Prometheus did not start')
  return prometheus
}

function report (line: string): void {
  process.stderr.write(`[e2e]   ${line}\n`)
}

const matches = (alert: Alert, name: string, labels: Record<string, string>): boolean =>
  alert.labels.alertname === name && Object.entries(labels).every(([label, value]) => alert.labels[label] === value)

const rule = (name: string): { for?: string } => {
  const found = shippedRuleGroups().flatMap((group) => group.rules).find((r) => r.alert === name)
  assert.ok(found !== undefined, `no shipped alert ${name}`)
  return found
}

/**
 * Waits for the alert (with at least these labels) to fire, polling Prometheus's alerts, and records when it went
 * pending and when it fired, counted from `since`. Its `for:` must have passed between its activation and its firing,
 * and no more than a few evaluations beyond.
 */
async function firing (name: string, labels: Record<string, string>, since: number, cause: string, timeoutMs = 120_000): Promise<Timing> {
  const forSeconds = scaledFor(rule(name).for)
  let pendingAt: number | undefined
  for (const deadline = Date.now() + timeoutMs; ;) {
    const found = (await prom().alerts()).find((alert) => matches(alert, name, labels))
    const now = Date.now()
    if (found?.state === 'pending') pendingAt ??= now
    if (found?.state === 'firing') {
      const activeAt = Date.parse(found.activeAt)
      const held = (now - activeAt) / 1000
      assert.ok(held >= forSeconds - INTERVAL_SECONDS, `${name} fired ${held.toFixed(1)} s after it turned active, before its for: of ${forSeconds} s`)
      assert.ok(held <= forSeconds + 5 * INTERVAL_SECONDS, `${name} fired ${held.toFixed(1)} s after it turned active, long after its for: of ${forSeconds} s`)
      if (forSeconds > 0) assert.ok(pendingAt !== undefined, `${name} was never seen pending`)
      const timing = { alert: name, labels, cause, forSeconds, pending: ((pendingAt ?? now) - since) / 1000, firing: (now - since) / 1000 }
      timings.push(timing)
      report(`${name} ${JSON.stringify(labels)}: pending ${timing.pending.toFixed(1)} s, firing ${timing.firing.toFixed(1)} s after ${cause} (for: ${forSeconds} s)`)
      return timing
    }
    if (now > deadline) {
      throw new Error(`${name} ${JSON.stringify(labels)} did not fire within ${timeoutMs / 1000} s of ${cause}; alerts now: ${JSON.stringify((await prom().alerts()).map((alert) => [alert.labels.alertname, alert.state]))}`)
    }
    await sleep(200)
  }
}

/** Waits until the alert is neither pending nor firing; returns the seconds since `since`. */
async function cleared (name: string, labels: Record<string, string>, since: number, timeoutMs = 60_000): Promise<number> {
  for (const deadline = Date.now() + timeoutMs; ;) {
    if (!(await prom().alerts()).some((alert) => matches(alert, name, labels))) return (Date.now() - since) / 1000
    assert.ok(Date.now() < deadline, `${name} still active ${timeoutMs / 1000} s later`)
    await sleep(200)
  }
}

async function post (path: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(`${env().hookServer.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
}

describe('end to end: the shipped alerts and dashboard on a real Prometheus', () => {
  let s: Scenario

  before(async () => {
    environment = await startEnvironment({ hookServerEnv: { HOOKS_BODY_TIMEOUT: String(BODY_TIMEOUT_SECONDS) } })
    prometheus = await startPrometheus({
      binDir,
      logsDir: environment.cluster.logsDir,
      targets: [{ job: JOB, address: environment.hookServer.probeAddress, labels: TARGET }],
      ruleGroups: scaledRuleGroups(),
      intervalSeconds: INTERVAL_SECONDS
    })
    process.stderr.write(`[e2e] environment and Prometheus ready (${prometheus.url}); logs in ${environment.cluster.logsDir}\n`)
    s = new Scenario(environment, 'e2e-monitoring')
    await s.kubectl(['create', 'namespace', s.namespace])
  }, { timeout: 300_000 })

  after(async () => {
    if (environment !== undefined && timings.length > 0) {
      writeFileSync(join(environment.cluster.logsDir, 'alert-timings.json'), `${JSON.stringify(timings, null, 2)}\n`)
      process.stderr.write(`[e2e] alert timings (seconds from the cause; for: scaled by 1/${FOR_SCALE}):\n${timings.map((t) =>
        `[e2e]   ${t.alert}: pending ${t.pending.toFixed(1)}, firing ${t.firing.toFixed(1)} (for: ${t.forSeconds} s)${t.cleared === undefined ? '' : `, cleared ${t.cleared.toFixed(1)} after the cause ended`} — ${t.cause}`).join('\n')}\n`)
    }
    await prometheus?.stop()
    await environment?.stop()
  }, { timeout: 60_000 })

  const step = async (name: string, body: () => Promise<void>): Promise<void> => {
    try {
      await s.step(name, body)
    } catch (error) {
      process.stderr.write(`\n[e2e] ${name} failed; diagnostics:\n${await s.diagnostics()}\n--- Prometheus log: ${prom().logFile}\n\n`)
      throw error
    }
  }

  it('Prometheus scrapes the hook server on its probe port', { timeout: 60_000 }, async () => {
    await step('up == 1', async () => {
      await s.eventually('the target up', async () => {
        assert.deepEqual((await prom().query(`up{job="${JOB}"}`)).map((series) => series.value[1]), ['1'])
      }, 30_000)
    })
  })

  it('a row changed behind PostgresWriter\'s back raises MetacontrollerHooksDriftRepaired', { timeout: 180_000 }, async () => {
    const sample = s.sample('postgres-writer.yaml')
    await step('a PodSet and a PostgresWriter, Ready', async () => {
      await s.env.cluster.waitForDefaultServiceAccount(s.namespace, 60_000)
      await s.applySample('podset.yaml')
      await s.applySample('postgres-writer.yaml')
      await s.eventually('the row written', async () => { assertReady(await s.get('postgreswriters', sample.metadata.name), 'True', 'RowWritten') })
    })
    const changed = Date.now()
    await step('the row changed by hand, repaired by a resync', async () => {
      await s.env.postgres.query(`UPDATE public."${sample.spec.table}" SET age = 99 WHERE id = $1`, [`${s.namespace}/${sample.metadata.name}`])
      await s.eventually('status.lastDriftRepair', async () => {
        assert.equal((await s.get('postgreswriters', sample.metadata.name)).status.lastDriftRepair?.reason, 'RowChanged')
      })
    })
    await step('MetacontrollerHooksDriftRepaired fires', async () => {
      await firing('MetacontrollerHooksDriftRepaired', { controller: 'postgres-writer', drift: 'changed' }, changed, 'an UPDATE of the row')
    })
  })

  it('a PodSet with an invalid stored spec raises MetacontrollerHooksInvalidSpec', { timeout: 180_000 }, async () => {
    const name = s.sample('podset.yaml').metadata.name
    let stored = 0
    await step('store replicas -1', async () => {
      await storeRefusedSpec(s, { crd: 'podsets.batch.tutorial.kubebuilder.io', resource: 'podsets', name }, ['/replicas/minimum'], { replicas: -1 })
      stored = Date.now()
      await s.eventually('Ready=False InvalidSpec', async () => { assertReady(await s.get('podsets', name), 'False', 'InvalidSpec') })
    })
    await step('MetacontrollerHooksInvalidSpec fires', async () => {
      await firing('MetacontrollerHooksInvalidSpec', { controller: 'podset' }, stored, 'storing replicas -1')
    })
  })

  it('a PulsarConsumer whose Deployment was scaled by hand while its spec is invalid raises MetacontrollerHooksObjectsRefused', { timeout: 240_000 }, async () => {
    const sample = s.sample('pulsar-consumer.yaml')
    const subject = { crd: 'pulsarconsumers.pulsar.pulsarconsumer.krvarma.com', resource: 'pulsarconsumers', name: sample.metadata.name }
    await step('a PulsarConsumer and its Deployment, then an invalid spec', async () => {
      await s.applySample('pulsar-consumer.yaml')
      await s.eventually('the Deployment', async () => { await s.get('deployments', `${subject.name}-deployment`) })
      await storeRefusedSpec(s, subject, ['/topic/minLength'], { topic: '' })
      await s.eventually('Ready=False InvalidSpec', async () => { assertReady(await s.get('pulsarconsumers', subject.name), 'False', 'InvalidSpec') })
    })
    const scaled = Date.now()
    await step('the Deployment scaled by hand: the hook cannot keep it as it is (422)', async () => {
      await s.kubectl(['scale', 'deployment', `${subject.name}-deployment`, '-n', s.namespace, '--replicas=5'])
      await s.eventually('a 422', async () => {
        assert.ok(s.hookCalls('pulsar-consumer', subject.name, 'sync').some((call) => call.statusCode === 422), 'no 422 yet')
      })
    })
    await step('MetacontrollerHooksObjectsRefused fires', async () => {
      await firing('MetacontrollerHooksObjectsRefused', { controller: 'pulsar-consumer', hook: 'sync' }, scaled, 'kubectl scale of the Deployment')
    })
  })

  it('stalled and malformed bodies raise MetacontrollerHooksSlowClientsRefused, MetacontrollerHooksSlowCalls and MetacontrollerHooksCallsFailing', { timeout: 240_000 }, async () => {
    const port = Number(new URL(env().hookServer.url).port)
    const stalled = async (count: number): Promise<void> => {
      const answers = await Promise.all(Array.from({ length: count }, async () => await slowBody({ port, path: '/podset/sync', length: 100_000, burst: 1000 }).answered))
      assert.deepEqual(answers.map((answer) => answer.status), Array(count).fill(408))
    }
    // rate() and increase() count what a counter gains between scrapes, not the value a new series starts at: the
    // series of podset's rejected calls and of 408 refusals are made first, and scraped, before the calls that count.
    let firstSlow = 0
    await step('10 empty bodies, refused 400, then one body that stalls, refused 408', async () => {
      for (let i = 0; i < 10; i++) assert.equal((await post('/podset/sync', '')).status, 400)
      await stalled(1)
      firstSlow = Date.now()
      await sleep(3 * INTERVAL_SECONDS * 1000)
    })
    let refused = 0
    await step(`8 bodies that stall, refused 408 after ${BODY_TIMEOUT_SECONDS} s`, async () => {
      await stalled(8)
      refused = Date.now()
    })
    // One call in about 60 past 5 s is already over 1%, and the empty bodies with the first 408 can pass 5% of
    // podset's calls: those two alerts count from the first 408, the 408 rate's from the eight.
    const first = `10 empty bodies refused 400 and a stalled one refused 408 after ${BODY_TIMEOUT_SECONDS} s`
    await step('the three alerts fire', async () => {
      await Promise.all([
        firing('MetacontrollerHooksSlowClientsRefused', { code: '408' }, refused, `8 stalled bodies refused 408 after ${BODY_TIMEOUT_SECONDS} s`),
        firing('MetacontrollerHooksSlowCalls', { controller: 'podset', hook: 'sync' }, firstSlow, first),
        firing('MetacontrollerHooksCallsFailing', { controller: 'podset', hook: 'sync', outcome: 'rejected' }, firstSlow, first)
      ])
    })
  })

  it('every dashboard panel\'s query returns a series', { timeout: 120_000 }, async () => {
    await step('a 304: a sync request sent again with the ETag of its answer', async () => {
      const body = JSON.stringify(fixture('podset', 'steady-state'))
      const etag = (await post('/podset/sync', body)).headers.get('etag')
      assert.ok(etag !== null)
      assert.equal((await post('/podset/sync', body, { 'if-none-match': etag })).status, 304)
    })
    await step('each query', async () => {
      for (const panel of shippedPanels()) {
        for (const expr of panel.exprs) {
          const query = runnable(expr, JOB, RATE_INTERVAL)
          const series = await s.eventually(`"${panel.title}": ${query} returns a series`, async () => {
            const result = await prom().query(query)
            assert.ok(result.length > 0, 'no series')
            return result
          }, 30_000)
          report(`${panel.title}: ${series.length} series from ${query.split('\n').join(' ')}`)
        }
      }
    })
  })

  it('PostgreSQL stopped: MetacontrollerHooksDatabaseDown goes pending, fires after its for:, and clears once PostgreSQL is back', { timeout: 180_000 }, async () => {
    const stopped = Date.now()
    await s.env.postgres.stop()
    let timing: Timing | undefined
    try {
      await step('pending, then firing', async () => {
        timing = await firing('MetacontrollerHooksDatabaseDown', { pod: TARGET.pod }, stopped, 'stopping PostgreSQL')
      })
    } finally {
      await s.env.postgres.restart()
    }
    const restarted = Date.now()
    await step('cleared once PostgreSQL is back', async () => {
      const seconds = await cleared('MetacontrollerHooksDatabaseDown', { pod: TARGET.pod }, restarted)
      if (timing !== undefined) timing.cleared = seconds
      report(`MetacontrollerHooksDatabaseDown cleared ${seconds.toFixed(1)} s after PostgreSQL restarted`)
    })
  })

  it('the hook server stopped: MetacontrollerHooksReplicaDown and MetacontrollerHooksDown fire', { timeout: 120_000 }, async () => {
    const stopped = Date.now()
    await env().hookServer.stop()
    await Promise.all([
      firing('MetacontrollerHooksDown', { job: JOB }, stopped, 'stopping the hook server'),
      firing('MetacontrollerHooksReplicaDown', { pod: TARGET.pod }, stopped, 'stopping the hook server')
    ])
  })
})
