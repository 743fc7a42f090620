/**
 * A real Prometheus for the e2e suite, built by scripts/build-e2e-binaries.sh from the Prometheus Go module: it scrapes
 * the given targets and evaluates the given rule groups, at the given intervals, with its data in a temporary
 * folder and its log in <logsDir>/prometheus.log.
 *
 *   const prometheus = await startPrometheus({ binDir, logsDir, targets: [...], ruleGroups, intervalSeconds: 1 })
 *   try { await prometheus.query('up') } finally { await prometheus.stop() }
 */
import { spawn } from 'node:child_process'
import { closeSync, existsSync, openSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { stringify } from 'yaml'
import { freePorts } from './cluster.js'

export interface ScrapeTarget {
  job: string
  /** host:port */
  address: string
  /** Labels added to every series of the target, as the Prometheus Operator adds namespace and pod. */
  labels?: Record<string, string>
}

export interface PrometheusOptions {
  binDir: string
  logsDir: string
  targets: ScrapeTarget[]
  ruleGroups: unknown[]
  /** Scrape and rule evaluation interval. */
  intervalSeconds: number
}

export interface Alert {
  labels: Record<string, string>
  annotations: Record<string, string>
  state: 'pending' | 'firing'
  activeAt: string
}

export interface Series { metric: Record<string, string>, value: [number, string] }

export interface Prometheus {
  url: string
  logFile: string
  /** An instant query's result vector; throws with Prometheus's error when the query fails. */
  query: (expr: string) => Promise<Series[]>
  /** Every pending or firing alert. */
  alerts: () => Promise<Alert[]>
  stop: () => Promise<void>
}

export async function startPrometheus (options: PrometheusOptions): Promise<Prometheus> {
  const binary = join(options.binDir, 'prometheus')
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run scripts/build-e2e-binaries.sh first`)
  const dir = await mkdtemp(join(tmpdir(), 'e2e-prometheus-'))
  const interval = `${options.intervalSeconds}s`
  await writeFile(join(dir, 'rules.yaml'), stringify({ groups: options.ruleGroups }, { lineWidth: 0 }))
  await writeFile(join(dir, 'prometheus.yaml'), stringify({
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: ['rules.yaml'],
    scrape_configs: [...new Set(options.targets.map((target) => target.job))].map((job) => ({
      job_name: job,
      static_configs: options.targets.filter((target) => target.job === job).map((target) => ({ targets: [target.address], labels: target.labels ?? {} }))
    }))
  }))
  const [port] = await freePorts(1)
  const url = `http://127.0.0.1:${port}`
  const logFile = join(options.logsDir, 'prometheus.log')
  const fd = openSync(logFile, 'a')
  const child = spawn(binary, [
    `--config.file=${join(dir, 'prometheus.yaml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`
  ], { stdio: ['ignore', fd, fd], cwd: dir })
  closeSync(fd)
  let exited = false
  child.on('exit', () => { exited = true })

  const stop = async (): Promise<void> => {
    if (!exited) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => { child.kill('SIGKILL') }, 5_000)
      await gone
      clearTimeout(timer)
    }
    await rm(dir, { recursive: true, force: true })
  }
  process.once('exit', () => { if (!exited) child.kill('SIGKILL') })

  const api = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${url}${path}`)
    const body = await response.json() as { status: string, data: T, error?: string }
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error ?? response.status}`)
    return body.data
  }

  try {
    for (const deadline = Date.now() + 60_000; ;) {
      if (exited) throw new Error(`Prometheus exited during start-up; see ${logFile}`)
      if (await fetch(`${url}/-/ready`).then((response) => response.ok, () => false)) break
      if (Date.now() > deadline) throw new Error(`Prometheus not ready after 60 s; see ${logFile}`)
      await sleep(100)
    }
  } catch (error) {
    await stop()
    throw error
  }

  return {
    url,
    logFile,
    query: async (expr) => (await api<{ resultType: string, result: Series[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts,
    stop
  }
}
