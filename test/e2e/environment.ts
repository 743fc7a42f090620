import { spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { controllers } from '../../hooks/controllers.js'
import { startPostgres, type PostgresProcess } from '../../dev/postgres-process.js'
import { spawnServer } from '../../dev/server-process.js'
import { startCluster, type Cluster } from './rig/cluster.js'
import { writeOverlay } from './overlay.js'
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

export interface HookServer {
  /** Where the hooks are served, on a port the system picked. */
  url: string
  /** Where /metrics is served (HOOKS_PROBE_PORT), `host:port`. */
  probeAddress: string
  logFile: string
  /** Every JSON log line written so far. */
  logLines: () => Array<Record<string, unknown>>
  running: () => boolean
  /** SIGTERM, as a pod's end; the environment's stop does it too. */
  stop: () => Promise<void>
}

export interface Environment {
  cluster: Cluster
  /** The hooks' `version`: v2 when the rig's Metacontroller supports it, else v1 (the overlay removes it: overlay.ts). */
  hookVersion: 'v1' | 'v2'
  postgres: PostgresProcess
  hookServer: HookServer
  /**
   * Stops the hook server and starts one from another checkout of the repository (a folder with its own hooks/ and
   * the same node_modules) on the same port, which every controller's webhook names; `hookServer` is then that one.
   */
  switchHookServer: (checkout: string) => Promise<void>
  /** Milliseconds each part took to start. */
  timings: Record<string, number>
  stop: () => Promise<void>
}

export interface EnvironmentOptions {
  /** Settings of the hook server, beside the database's and LOG_LEVEL. */
  hookServerEnv?: Record<string, string>
}

export async function startEnvironment (options: EnvironmentOptions = {}): Promise<Environment> {
  const timings: Record<string, number> = {}
  const cleanups: Array<() => Promise<void>> = []
  const stop = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error) => { process.stderr.write(`[e2e] cleanup failed: ${String(error)}\n`) })
  }
  try {
    let t0 = Date.now()
    const postgres = await startPostgres()
    cleanups.push(postgres.remove)
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
    const hookServer = await startHookServer({ DATABASE_URL: postgres.connectionString, ...options.hookServerEnv }, cluster.logsDir, cleanups)
    timings['hook server'] = Date.now() - t0

    t0 = Date.now()
    const hookVersion = cluster.metacontroller !== undefined && metacontrollerSupportsHookV2(cluster.metacontroller.crds) ? 'v2' : 'v1'
    const overlay = await temporaryDir('e2e-overlay-', cleanups)
    await writeOverlay(controllers, join(root, 'manifests'), overlay, {
      hookServerUrl: hookServer.url,
      resyncPeriodSeconds: RESYNC_PERIOD_SECONDS,
      stripHookVersion: hookVersion === 'v1'
    })
    await cluster.kubectl(['apply', '-k', overlay])
    timings['overlay applied'] = Date.now() - t0

    const environment: Environment = {
      cluster,
      hookVersion,
      postgres,
      hookServer,
      timings,
      stop,
      switchHookServer: async (checkout) => {
        const port = Number(new URL(environment.hookServer.url).port)
        await environment.hookServer.stop()
        environment.hookServer = await startHookServer({ DATABASE_URL: postgres.connectionString, ...options.hookServerEnv }, cluster.logsDir, cleanups, { checkout, port })
      }
    }
    return environment
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

let hookServers = 0

/** The hook server, from this checkout or another; on a port the system picks unless given. */
async function startHookServer (env: Record<string, string>, logsDir: string, cleanups: Array<() => Promise<void>>, { checkout = root, port }: { checkout?: string, port?: number } = {}): Promise<HookServer> {
  const logFile = join(logsDir, hookServers++ === 0 ? 'hook-server.log' : `hook-server-${hookServers}.log`)
  const server = spawnServer({ port, cwd: checkout, entry: join(checkout, 'hooks', 'server.ts'), env: { LOG_LEVEL: 'info', ...env }, output: { file: logFile } })
  cleanups.push(async () => { await server.stop() })
  await server.listening(60_000)
  return {
    url: server.url,
    probeAddress: new URL(server.probeUrl).host,
    logFile,
    logLines: () => server.output().split('\n').flatMap((line) => {
      try {
        return line.startsWith('{') ? [JSON.parse(line) as Record<string, unknown>] : []
      } catch {
        return [] // a line being written right now
      }
    }),
    running: server.running,
    stop: async () => { await server.stop() }
  }
}
