import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { controllers } from '../../hooks/controllers.js'
import { freePort, startEmbeddedPostgres, type EmbeddedPostgres } from '../../hooks/database/embedded.js'
import { writeOverlay } from './overlay.js'
import { startCluster, type Cluster } from './rig/cluster.js'
import { metacontrollerSupportsHookV2 } from './rig/metacontroller.js'

/**
 * What the end-to-end suite runs: the rig's cluster (etcd, kube-apiserver, kube-controller-manager, Metacontroller)
 * with the product installed through an overlay generated from the controller registry (overlay.ts), a PostgreSQL
 * of the suite's own that can be stopped and started again on the same port, and the hook server as a local
 * process on a free port, which the overlay's webhooks name.
 */

const root = join(import.meta.dirname, '..', '..')

/** How often Metacontroller resyncs every parent in the suite. */
export const RESYNC_PERIOD_SECONDS = 5

/**
 * Added to the rig's controllers (namespace, garbage collector, service accounts) for the BookStore claims: binding
 * (the API server resizes only bound claims), and the removal of the pvc-protection and pv-protection finalizers
 * that admission puts on every claim and volume, without which a garbage-collected claim stays Terminating.
 */
const VOLUME_CONTROLLERS = ['persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller']

export interface SuitePostgres {
  connectionString: string
  /** Stops PostgreSQL (a fast shutdown: connections are closed); its data stays. */
  stop: () => Promise<void>
  /** Starts it again on the same data and port. */
  start: () => Promise<void>
  /** Runs one query on a connection of its own. */
  query: <Row extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<Row[]>
}

export interface HookServer {
  logFile: string
  /** Every JSON log line written so far. */
  logLines: () => Array<Record<string, unknown>>
  running: () => boolean
}

export interface Environment {
  cluster: Cluster
  /** The hooks' `version`: v2 when the rig's Metacontroller supports it, else v1 (the overlay removes it: overlay.ts). */
  hookVersion: 'v1' | 'v2'
  postgres: SuitePostgres
  hookServer: HookServer
  /** Milliseconds each part took to start. */
  timings: Record<string, number>
  stop: () => Promise<void>
}

export async function startEnvironment (): Promise<Environment> {
  const timings: Record<string, number> = {}
  const cleanups: Array<() => Promise<void>> = []
  const stop = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error) => { process.stderr.write(`[e2e] cleanup failed: ${String(error)}\n`) })
  }
  try {
    let t0 = Date.now()
    const postgres = await startSuitePostgres(cleanups)
    timings.postgres = Date.now() - t0

    t0 = Date.now()
    const crds = await renderCrds(cleanups)
    const cluster = await startCluster({
      manifests: [crds],
      // A repeated string-list flag adds to the list: the rig's own --controllers stay.
      controllerManagerArgs: [`--controllers=${VOLUME_CONTROLLERS.join(',')}`]
    })
    cleanups.push(async () => { await cluster.stop() })
    timings.cluster = Date.now() - t0
    Object.assign(timings, Object.fromEntries(Object.entries(cluster.timings).map(([part, ms]) => [`cluster: ${part}`, ms])))

    t0 = Date.now()
    const port = await freePort()
    const hookServer = await startHookServer(port, postgres.connectionString, cluster.logsDir, cleanups)
    timings['hook server'] = Date.now() - t0

    t0 = Date.now()
    const hookVersion = cluster.metacontroller !== undefined && metacontrollerSupportsHookV2(cluster.metacontroller.crds) ? 'v2' : 'v1'
    const overlay = await temporaryDir('e2e-overlay-', cleanups)
    await writeOverlay(controllers, join(root, 'manifests'), overlay, {
      hookServerUrl: `http://127.0.0.1:${port}`,
      resyncPeriodSeconds: RESYNC_PERIOD_SECONDS,
      stripHookVersion: hookVersion === 'v1'
    })
    await cluster.kubectl(['apply', '-k', overlay])
    timings['overlay applied'] = Date.now() - t0

    return { cluster, hookVersion, postgres, hookServer, timings, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** A folder of its own, removed when the suite stops. */
async function temporaryDir (prefix: string, cleanups: Array<() => Promise<void>>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  cleanups.push(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

async function startSuitePostgres (cleanups: Array<() => Promise<void>>): Promise<SuitePostgres> {
  const dataDir = await temporaryDir('e2e-pg-', cleanups)
  let running: EmbeddedPostgres | undefined = await startEmbeddedPostgres({ dataDir, persistent: true })
  const { port, connectionString } = running
  cleanups.push(async () => { await running?.stop() })
  return {
    connectionString,
    stop: async () => {
      await running?.stop()
      running = undefined
    },
    start: async () => {
      running ??= await startEmbeddedPostgres({ dataDir, port, persistent: true })
    },
    query: async <Row extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
      const client = new pg.Client({ connectionString })
      await client.connect()
      try {
        return (await client.query<Row>(text, values)).rows
      } finally {
        await client.end()
      }
    }
  }
}

/** The product's CRDs, rendered with the rig's kubectl so that they exist before kube-controller-manager starts. */
async function renderCrds (cleanups: Array<() => Promise<void>>): Promise<string> {
  const file = join(await temporaryDir('e2e-crds-', cleanups), 'crds.yaml')
  writeFileSync(file, await kustomize(join(root, 'manifests', 'crds')))
  return file
}

/** What `kubectl kustomize <dir>` renders, with the rig's kubectl. */
export async function kustomize (dir: string): Promise<string> {
  return await output(join(process.env.E2E_BIN_DIR ?? join(root, '.cache', 'e2e-bin'), 'kubectl'), ['kustomize', dir])
}

async function output (file: string, args: string[]): Promise<string> {
  if (!existsSync(file)) throw new Error(`${file} is missing: run scripts/build-e2e-binaries.sh first`)
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  if (code !== 0) throw new Error(`${file} ${args.join(' ')} exited with ${code}: ${stderr}`)
  return stdout
}

async function startHookServer (port: number, databaseUrl: string, logsDir: string, cleanups: Array<() => Promise<void>>): Promise<HookServer> {
  const logFile = join(logsDir, 'hook-server.log')
  const fd = openSync(logFile, 'a')
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'hooks/server.ts'], {
    cwd: root,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', HOOKS_SHUTDOWN_DELAY: '0' },
    stdio: ['ignore', fd, fd]
  })
  closeSync(fd)
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  const running = (): boolean => child.exitCode === null && child.signalCode === null
  const killNow = (): void => { if (running()) child.kill('SIGKILL') }
  process.once('exit', killNow)
  cleanups.push(async () => {
    process.removeListener('exit', killNow)
    if (!running()) return
    child.kill('SIGTERM')
    const timer = setTimeout(killNow, 10_000)
    await exited
    clearTimeout(timer)
  })

  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (!running()) throw new Error(`the hook server exited at start-up; ${logFile}:\n${readFileSync(logFile, 'utf8')}`)
    try {
      if ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the hook server did not listen within 60 s; ${logFile}:\n${readFileSync(logFile, 'utf8')}`)
    await sleep(200)
  }
  return {
    logFile,
    logLines: () => readFileSync(logFile, 'utf8').split('\n').flatMap((line) => {
      try {
        return line.startsWith('{') ? [JSON.parse(line) as Record<string, unknown>] : []
      } catch {
        return [] // a line being written right now
      }
    }),
    running
  }
}
