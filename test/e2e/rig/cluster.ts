/**
 * A throw-away local Kubernetes control plane for the e2e suite: etcd, kube-apiserver, kube-controller-manager
 * (namespace, garbagecollector and serviceaccount controllers) and Metacontroller running out of cluster, plus the
 * kubectl of the same Kubernetes release. No kubelet, no scheduler: Pods are stored but never run.
 *
 * The binaries come from scripts/build-e2e-binaries.sh (.cache/e2e-bin, or $E2E_BIN_DIR); nothing here needs `go`.
 * Metacontroller can be another build of it, given by $E2E_METACONTROLLER (see ./metacontroller.ts).
 *
 *   const cluster = await startCluster({ metacontrollerArgs: ['--cache-flush-interval=10s'] })
 *   try { await cluster.kubectl(['apply', '-f', '-'], yaml) } finally { await cluster.stop() }
 *
 * Every process writes stdout+stderr to <logsDir>/<component>.log; the logs stay after stop(), the data dir
 * (etcd data, certificates, keys, kubeconfig) is removed. Processes are killed when the Node process exits, and a
 * small watchdog shell kills them if Node itself is killed with SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { metacontrollerBuild, type MetacontrollerBuild } from './metacontroller.js'
import { run } from './process.js'

export type Component = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'metacontroller' | 'kubectl'

export interface ClusterOptions {
  /** Directory with the binaries and metacontroller-crds-v1.yaml. Default: $E2E_BIN_DIR or <repo>/.cache/e2e-bin. */
  binDir?: string
  /** Which Metacontroller binary and CRDs to run. Default: $E2E_METACONTROLLER's build, else the bin dir's. */
  metacontrollerBuild?: MetacontrollerBuild
  /** Where the component logs go (created if missing; kept after stop). Default: a new <repo>/.cache/e2e-logs/<time>-<pid>-<n>. */
  logsDir?: string
  /** Parent directory of the data dir. Default: /dev/shm when writable, else the OS temp dir. */
  dataParent?: string
  /** Extra Metacontroller flags, appended last (so they override the defaults), e.g. ['--cache-flush-interval=10s']. */
  metacontrollerArgs?: string[]
  /**
   * A hosts file that Metacontroller resolves names with instead of /etc/hosts (bind-mounted over it in a mount
   * namespace of its own), as a cluster's DNS resolves a Service's name for it: the node tier writes the hook
   * Service's ClusterIP there. Rewritten in place, it is read again within seconds.
   */
  metacontrollerHostsFile?: string
  /** Extra kube-apiserver flags, appended last. */
  apiserverArgs?: string[]
  /** Extra kube-controller-manager flags, appended last. */
  controllerManagerArgs?: string[]
  /**
   * Manifest files (YAML or JSON) applied right after Metacontroller's CRDs and before kube-controller-manager starts;
   * every CRD is then waited Established. Put the suite's own CRDs here: KCM's garbage collector knows kinds that exist
   * when it starts, and notices later ones only on its 30 s discovery resync.
   */
  manifests?: string[]
  /** Start kube-controller-manager (GC, namespace deletion, default ServiceAccounts). Default true. */
  controllerManager?: boolean
  /** Start Metacontroller. Default true. */
  metacontroller?: boolean
  /**
   * Keep the ServiceAccount admission plugin on (default true, as in a real cluster). Pods then need the namespace's
   * `default` ServiceAccount, which kube-controller-manager creates shortly after the namespace: use
   * `cluster.waitForDefaultServiceAccount(ns)` before creating bare Pods. Forced off when controllerManager is false.
   */
  serviceAccountAdmission?: boolean
  /** Time allowed for each component to become ready. Default 90 s. */
  readyTimeoutMs?: number
  /** Print start-up progress to stderr. Default: true when $E2E_RIG_VERBOSE is set. */
  verbose?: boolean
}

export interface Cluster {
  /** Path of a kubeconfig (cluster-admin token, CA of the apiserver's self-signed certificate). */
  kubeconfig: string
  /** https://127.0.0.1:<port> */
  server: string
  /** Bearer token of the `admin` user (group system:masters). */
  token: string
  /** PEM file of the apiserver's serving certificate chain (usable as CA). */
  caFile: string
  logsDir: string
  dataDir: string
  binDir: string
  /** Metacontroller's version as stamped by the build script (e.g. v4.17.2), or undefined when not started or not stamped. */
  metacontrollerVersion: string | undefined
  /** The Metacontroller binary and CRDs the cluster runs, or undefined when not started. */
  metacontroller: MetacontrollerBuild | undefined
  /** Milliseconds from startCluster() to each component being ready. */
  timings: Record<string, number>
  /** Runs the built kubectl with this kubeconfig; resolves stdout, rejects with stderr on a non-zero exit. */
  kubectl: (args: string[], input?: string) => Promise<string>
  /** Log file of a component. */
  logFile: (component: Component) => string
  /** Throws (with the log tail) if a component has exited since start-up. */
  assertRunning: () => void
  /** Stops Metacontroller (SIGTERM) and starts it again, as a pod restart does; resolves once it is ready. */
  restartMetacontroller: () => Promise<void>
  /** Stops Metacontroller (SIGTERM): nothing syncs until startMetacontroller(). Idempotent. */
  stopMetacontroller: () => Promise<void>
  /** Starts Metacontroller again after stopMetacontroller(); resolves once it is ready, at once if it runs. */
  startMetacontroller: () => Promise<void>
  /** Waits until KCM has created the namespace's `default` ServiceAccount (needed for Pods with admission on). */
  waitForDefaultServiceAccount: (namespace: string, timeoutMs?: number) => Promise<void>
  /** SIGTERM metacontroller, KCM, apiserver, etcd in that order (SIGKILL after a grace period); removes dataDir. Idempotent. */
  stop: () => Promise<void>
}

/** A failure of one component, with its log file and the last lines of it in the message. */
export class RigError extends Error {
  constructor (readonly component: Component | 'rig', message: string, readonly logFile?: string) {
    super(logFile === undefined
      ? `[e2e rig] ${component}: ${message}`
      : `[e2e rig] ${component}: ${message}\n--- last lines of ${logFile} ---\n${tail(logFile, 40)}\n--- end of ${logFile} ---`)
    this.name = 'RigError'
  }
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
/** The Services' ClusterIPs. */
export const SERVICE_CIDR = '10.0.0.0/24'
const STOP_ORDER: Component[] = ['metacontroller', 'kube-controller-manager', 'kube-apiserver', 'etcd']
const STOP_GRACE_MS = 5_000
// Metacontroller's client defaults (5 QPS, burst 10) make each discovery refresh of a 1.36 apiserver (~50 group
// versions) take ~10 s of client-side throttling, so a parent CRD created by a test went unseen for that long.
const MC_CLIENT_ARGS = ['--client-go-qps=100', '--client-go-burst=200']

interface Proc {
  component: Component
  child: ChildProcess
  logFile: string
  exited: { code: number | null, signal: NodeJS.Signals | null } | undefined
  stopping: boolean
}

/** Every process started by any cluster of this Node process, killed on exit. */
const allProcs = new Set<Proc>()
let exitHooksInstalled = false

function installExitHooks (): void {
  if (exitHooksInstalled) return
  exitHooksInstalled = true
  process.on('exit', killAllNow)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      killAllNow()
      // Restore the default action and re-raise, so the process still dies of the signal.
      process.removeListener(signal, onSignal)
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
    }
    process.on(signal, onSignal)
  }
}

function killAllNow (): void {
  for (const p of allProcs) {
    if (p.exited === undefined) {
      try { p.child.kill('SIGKILL') } catch { /* already gone */ }
    }
  }
}

let clusterCount = 0

export async function startCluster (options: ClusterOptions = {}): Promise<Cluster> {
  const t0 = Date.now()
  const verbose = options.verbose ?? (process.env.E2E_RIG_VERBOSE !== undefined && process.env.E2E_RIG_VERBOSE !== '')
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000
  const withKcm = options.controllerManager ?? true
  const withMetacontroller = options.metacontroller ?? true
  const saAdmission = withKcm && (options.serviceAccountAdmission ?? true)
  const binDir = resolve(options.binDir ?? (nonEmpty(process.env.E2E_BIN_DIR) ?? join(REPO_ROOT, '.cache', 'e2e-bin')))
  const n = ++clusterCount
  const logsDir = resolve(options.logsDir ?? join(REPO_ROOT, '.cache', 'e2e-logs',
    `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}-${n}`))
  mkdirSync(logsDir, { recursive: true })
  const timings: Record<string, number> = {}
  const say = (text: string): void => { if (verbose) process.stderr.write(`[e2e rig] +${Date.now() - t0} ms ${text}\n`) }
  const mark = (what: string): void => { timings[what] = Date.now() - t0; say(`${what} ready`) }

  const mcBuild = withMetacontroller ? options.metacontrollerBuild ?? metacontrollerBuild(binDir) : undefined
  const bin = (name: string): string => name === 'metacontroller' && mcBuild !== undefined ? mcBuild.binary : join(binDir, name)
  const needed = [...['etcd', 'kube-apiserver', 'kubectl', ...(withKcm ? ['kube-controller-manager'] : [])].map(bin),
    ...(mcBuild === undefined ? [] : [mcBuild.binary, mcBuild.crds])]
  const missing = needed.filter((file) => !existsSync(file))
  if (missing.length > 0) {
    throw new RigError('rig', `missing ${missing.join(', ')}: run scripts/build-e2e-binaries.sh first`)
  }
  const mcVersion = mcBuild?.version

  const dataParent = options.dataParent ?? (writable('/dev/shm') ? '/dev/shm' : tmpdir())
  const dataDir = await mkdtemp(join(dataParent, 'e2e-rig-'))
  const procs = new Map<Component, Proc>()
  const logFile = (component: Component): string => join(logsDir, `${component}.log`)
  const watchdog = startWatchdog(dataDir, logsDir)

  let stopped: Promise<void> | undefined
  const stop = async (): Promise<void> => {
    stopped ??= (async () => {
      for (const component of STOP_ORDER) {
        const p = procs.get(component)
        if (p !== undefined) await stopProc(p)
      }
      watchdog.kill()
      await rm(dataDir, { recursive: true, force: true })
      say(`stopped; logs kept in ${logsDir}`)
    })()
    return await stopped
  }

  const start = (component: Component, args: string[], env: NodeJS.ProcessEnv = {}): Proc => {
    const file = logFile(component)
    const fd = openSync(file, 'a')
    writeFileSync(fd, `# ${new Date().toISOString()} ${bin(component)} ${args.join(' ')}\n`)
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env }
    if (env.KUBECONFIG === undefined) delete childEnv.KUBECONFIG
    const hosts = component === 'metacontroller' ? options.metacontrollerHostsFile : undefined
    // unshare and sh exec into Metacontroller: the pid and the signals stay its own.
    const [command, commandArgs] = hosts === undefined
      ? [bin(component), args]
      : ['unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', resolve(hosts), bin(component), ...args]]
    const child = spawn(command, commandArgs, { stdio: ['ignore', fd, fd], env: childEnv, cwd: dataDir })
    closeSync(fd)
    const p: Proc = { component, child, logFile: file, exited: undefined, stopping: false }
    child.on('exit', (code, signal) => {
      p.exited = { code, signal }
      allProcs.delete(p)
      if (!p.stopping) say(`${component} exited unexpectedly (code ${code}, signal ${signal})`)
    })
    child.on('error', (error) => {
      p.exited ??= { code: null, signal: null }
      allProcs.delete(p)
      writeFileSync(file, `# spawn error: ${error.message}\n`, { flag: 'a' })
    })
    // Do not keep the event loop alive for the children; the exit hook and stop() take care of them.
    child.unref()
    procs.set(component, p)
    allProcs.add(p)
    installExitHooks()
    if (child.pid !== undefined) writeFileSync(join(dataDir, 'pids'), `${child.pid}\n`, { flag: 'a' })
    say(`${component} started (pid ${child.pid}), log ${file}`)
    return p
  }

  const assertRunning = (): void => {
    for (const p of procs.values()) {
      if (p.exited !== undefined && !p.stopping) {
        throw new RigError(p.component, `exited (code ${p.exited.code}, signal ${p.exited.signal})`, p.logFile)
      }
    }
  }

  try {
    // --- files: ports, service-account key, token, kubeconfig --------------------------------------------------
    const [etcdPort, etcdPeerPort, apiPort, kcmPort, mcPort] = await freePorts(5) as [number, number, number, number, number]
    const token = randomBytes(24).toString('hex')
    const pki = join(dataDir, 'pki')
    mkdirSync(pki)
    const saKey = join(dataDir, 'sa.key')
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' }
    })
    await writeFile(saKey, privateKey, { mode: 0o600 })
    const tokens = join(dataDir, 'tokens.csv')
    await writeFile(tokens, `${token},admin,admin,"system:masters"\n`, { mode: 0o600 })
    const server = `https://127.0.0.1:${apiPort}`
    const caFile = join(pki, 'apiserver.crt')
    const kubeconfig = join(dataDir, 'kubeconfig')
    // JSON is YAML: no YAML library needed.
    await writeFile(kubeconfig, JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'e2e', cluster: { server, 'certificate-authority': caFile } }],
      users: [{ name: 'admin', user: { token } }],
      contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: 'admin' } }],
      'current-context': 'e2e'
    }, null, 2), { mode: 0o600 })

    const kubectl = async (args: string[], input?: string): Promise<string> =>
      await run(bin('kubectl'), ['--kubeconfig', kubeconfig, ...args], { input })

    // --- etcd ------------------------------------------------------------------------------------------------------
    const etcdUrl = `http://127.0.0.1:${etcdPort}`
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`
    const etcd = start('etcd', [
      '--name=e2e',
      `--data-dir=${join(dataDir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=e2e=${peerUrl}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn'
    ])
    await waitFor(etcd, readyTimeoutMs, async () => {
      const res = await get(`${etcdUrl}/health`)
      return res.status === 200 && /"health":\s*"true"/.test(res.body)
    })
    mark('etcd')

    // --- kube-apiserver --------------------------------------------------------------------------------------------
    const apiserver = start('kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--cert-dir=${pki}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--service-account-issuer=${server}`,
      `--service-account-key-file=${saKey}`,
      `--service-account-signing-key-file=${saKey}`,
      `--token-auth-file=${tokens}`,
      '--authorization-mode=RBAC',
      ...(saAdmission ? [] : ['--disable-admission-plugins=ServiceAccount']),
      '--allow-privileged=true',
      // The default/kubernetes Endpoints cannot hold a loopback address; without this the reconciler logs errors.
      '--endpoint-reconciler-type=none',
      ...(options.apiserverArgs ?? [])
    ])
    await waitFor(apiserver, readyTimeoutMs, async () => {
      const res = await get(`${server}/readyz`, token)
      return res.status === 200
    })
    mark('kube-apiserver')

    // --- Metacontroller's CRDs (before KCM, so its GC discovers them at start) --------------------------------------
    if (mcBuild !== undefined) {
      const crds = mcBuild.crds
      await kubectlStep(apiserver, kubectl, ['apply', '--server-side', '-f', crds])
      await kubectlStep(apiserver, kubectl, ['wait', '--for=condition=Established', '--timeout=60s', '-f', crds])
      mark('metacontroller CRDs')
    }
    if ((options.manifests ?? []).length > 0) {
      for (const file of options.manifests ?? []) {
        await kubectlStep(apiserver, kubectl, ['apply', '--server-side', '-f', resolve(file)])
      }
      await kubectlStep(apiserver, kubectl, ['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all'])
      mark('manifests')
    }

    // --- kube-controller-manager -----------------------------------------------------------------------------------
    if (withKcm) {
      const kcm = start('kube-controller-manager', [
        `--kubeconfig=${kubeconfig}`,
        '--controllers=namespace-controller,garbage-collector-controller,serviceaccount-controller',
        `--service-account-private-key-file=${saKey}`,
        `--root-ca-file=${caFile}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${kcmPort}`,
        `--cert-dir=${join(pki, 'kcm')}`,
        ...(options.controllerManagerArgs ?? [])
      ])
      await waitFor(kcm, readyTimeoutMs, async () => {
        const res = await get(`https://127.0.0.1:${kcmPort}/healthz`)
        return res.status === 200
      })
      mark('kube-controller-manager')
    }

    // --- Metacontroller ----------------------------------------------------------------------------------------------
    const startMetacontroller = async (): Promise<void> => {
      const legacy = mcVersion !== undefined && /^v1\./.test(mcVersion)
      // v1.x (klog, --debug-addr, no health probe) vs v4.x (zap, --metrics-address, --health-probe-bind-address).
      const mcArgs = legacy
        ? [
            // v1.5.20 overwrites --kubeconfig with --client-config-path even when the latter is empty.
            `--client-config-path=${kubeconfig}`,
            '--discovery-interval=1s',
            `--debug-addr=127.0.0.1:${mcPort}`,
            '-v=4',
            ...MC_CLIENT_ARGS
          ]
        : [
            `--kubeconfig=${kubeconfig}`,
            '--discovery-interval=1s',
            '--metrics-address=0',
            `--health-probe-bind-address=127.0.0.1:${mcPort}`,
            '--zap-log-level=4',
            ...MC_CLIENT_ARGS
          ]
      const startedWorkers = legacy ? (await readFile(logFile('metacontroller'), 'utf8').catch(() => '')).match(/Starting workers/g)?.length ?? 0 : 0
      const mc = start('metacontroller', [...mcArgs, ...(options.metacontrollerArgs ?? [])], { KUBECONFIG: kubeconfig })
      await waitFor(mc, readyTimeoutMs, legacy
        ? async () => {
          // No readiness endpoint: metrics answer once the manager runs, then wait for both controllers' workers.
          const res = await get(`http://127.0.0.1:${mcPort}/metrics`)
          if (res.status !== 200) return false
          const log = await readFile(mc.logFile, 'utf8')
          return (log.match(/Starting workers/g) ?? []).length >= startedWorkers + 2
        }
        : async () => (await get(`http://127.0.0.1:${mcPort}/readyz`)).status === 200)
    }
    if (withMetacontroller) {
      await startMetacontroller()
      mark('metacontroller')
    }

    say(`cluster ready in ${Date.now() - t0} ms; kubeconfig ${kubeconfig}`)
    return {
      kubeconfig,
      server,
      token,
      caFile,
      logsDir,
      dataDir,
      binDir,
      metacontrollerVersion: mcVersion,
      metacontroller: mcBuild,
      timings,
      kubectl: async (args, input) => {
        try {
          return await kubectl(args, input)
        } catch (error) {
          // Point at the apiserver's log when the apiserver is what died.
          assertRunning()
          throw error
        }
      },
      logFile,
      assertRunning,
      restartMetacontroller: async () => {
        const mc = procs.get('metacontroller')
        if (mc === undefined) throw new RigError('rig', 'Metacontroller was not started')
        await stopProc(mc)
        await startMetacontroller()
        say('metacontroller restarted')
      },
      stopMetacontroller: async () => {
        const mc = procs.get('metacontroller')
        if (mc === undefined) throw new RigError('rig', 'Metacontroller was not started')
        await stopProc(mc)
        say('metacontroller stopped')
      },
      startMetacontroller: async () => {
        const mc = procs.get('metacontroller')
        if (mc === undefined) throw new RigError('rig', 'Metacontroller was not started')
        if (mc.exited === undefined) return
        await startMetacontroller()
        say('metacontroller started')
      },
      waitForDefaultServiceAccount: async (namespace, timeoutMs = 30_000) => {
        const deadline = Date.now() + timeoutMs
        for (;;) {
          try {
            await kubectl(['get', 'serviceaccount', 'default', '-n', namespace, '-o', 'name'])
            return
          } catch (error) {
            if (Date.now() > deadline) {
              throw new RigError('kube-controller-manager', `no default ServiceAccount in ${namespace} after ${timeoutMs} ms: ${String(error)}`, logFile('kube-controller-manager'))
            }
            await sleep(100)
          }
        }
      },
      stop
    }
  } catch (error) {
    await stop().catch(() => {})
    throw error
  }
}

// --- helpers ---------------------------------------------------------------------------------------------------------

function nonEmpty (value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}

function writable (dir: string): boolean {
  try {
    const probe = join(dir, `.e2e-rig-probe-${process.pid}`)
    writeFileSync(probe, '')
    rmSync(probe)
    return true
  } catch {
    return false
  }
}

/** The last `lines` lines of a file, or a note why there are none. */
function tail (file: string, lines: number): string {
  try {
    const text = readFileSync(file, 'utf8').trimEnd()
    return text === '' ? '(empty)' : text.split('\n').slice(-lines).join('\n')
  } catch (error) {
    return `(cannot read: ${String(error)})`
  }
}

async function sleep (ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/** Distinct free TCP ports on 127.0.0.1 (all held open together, so they differ). */
export async function freePorts (count: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: count }, async () => await new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => { resolve(s) })
  })))
  const ports = servers.map((s) => {
    const address = s.address()
    if (address === null || typeof address === 'string') throw new RigError('rig', 'cannot pick a free port')
    return address.port
  })
  await Promise.all(servers.map(async (s) => await new Promise((resolve) => s.close(resolve))))
  return ports
}

/** GET with a short timeout; TLS certificates are not verified (readiness probes only). */
async function get (url: string, token?: string): Promise<{ status: number, body: string }> {
  return await new Promise((resolve) => {
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, {
      method: 'GET',
      timeout: 2_000,
      rejectUnauthorized: false,
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
    }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body }) })
      res.on('error', () => { resolve({ status: 0, body }) })
    })
    req.on('timeout', () => { req.destroy() })
    req.on('error', () => { resolve({ status: 0, body: '' }) })
    req.end()
  })
}

/** Polls `ready` until true; fails at once if the process exits, or after `timeoutMs`, pointing at its log. */
async function waitFor (p: Proc, timeoutMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (p.exited !== undefined) {
      throw new RigError(p.component, `exited during start-up (code ${p.exited.code}, signal ${p.exited.signal})`, p.logFile)
    }
    if (await ready().catch(() => false)) return
    if (Date.now() > deadline) throw new RigError(p.component, `not ready after ${timeoutMs} ms`, p.logFile)
    await sleep(100)
  }
}

async function kubectlStep (owner: Proc, kubectl: (args: string[]) => Promise<string>, args: string[]): Promise<void> {
  try {
    await kubectl(args)
  } catch (error) {
    throw new RigError(owner.component, `kubectl ${args.join(' ')} failed: ${error instanceof Error ? error.message : String(error)}`, owner.logFile)
  }
}

async function stopProc (p: Proc): Promise<void> {
  p.stopping = true
  if (p.exited !== undefined) return
  const exited = new Promise<void>((resolve) => {
    if (p.exited !== undefined) resolve()
    p.child.once('exit', () => { resolve() })
  })
  p.child.kill('SIGTERM')
  const timer = setTimeout(() => { if (p.exited === undefined) p.child.kill('SIGKILL') }, STOP_GRACE_MS)
  await exited
  clearTimeout(timer)
}

/**
 * A detached shell that, once this Node process is gone (even by SIGKILL), kills the pids listed in <dataDir>/pids
 * and removes dataDir. stop() kills it first.
 */
function startWatchdog (dataDir: string, logsDir: string): { kill: () => void } {
  const script = `
    while kill -0 ${process.pid} 2>/dev/null && [ -d "$1" ]; do sleep 1; done
    if [ -d "$1" ]; then
      [ -f "$1/pids" ] && while read -r pid; do kill -9 "$pid" 2>/dev/null; done < "$1/pids"
      rm -rf "$1"
      echo "$(date -u +%FT%TZ) node process ${process.pid} gone: killed the rig's processes" >> "$2/watchdog.log"
    fi`
  try {
    const child = spawn('/bin/sh', ['-c', script, 'e2e-rig-watchdog', dataDir, logsDir], { detached: true, stdio: 'ignore' })
    child.on('error', () => {})
    child.unref()
    return { kill: () => { try { child.kill('SIGKILL') } catch { /* gone */ } } }
  } catch {
    return { kill: () => {} }
  }
}
