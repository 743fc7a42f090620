/**
 * The node tier's environment: the rig's control plane with the controllers a Deployment and a Service need, a real
 * node (../rig/node.ts) that runs the image scripts/build-image.sh built, a PostgreSQL outside the node, and the
 * product installed as the README tells a user: `kubectl apply -k` of a copy of manifests/ in which only the
 * image (`images:` of manifests/server, as `kustomize edit set image` writes it) and the database Secret differ.
 * Metacontroller calls the hooks at the Service's name, which resolves to its ClusterIP as cluster DNS would
 * resolve it; kube-proxy's rules pick a ready pod.
 */
import assert from 'node:assert/strict'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parse, stringify } from 'yaml'
import { startPostgres, type PostgresProcess } from '../../../dev/postgres-process.js'
import { startCluster, type Cluster } from '../rig/cluster.js'
import { metacontrollerSupportsHookV2 } from '../rig/metacontroller.js'
import { startNode, type Node } from '../rig/node.js'
import { tail } from '../rig/process.js'
import type { KubeObject } from '../scenario.js'

const root = join(import.meta.dirname, '..', '..', '..')
export const NAMESPACE = 'metacontroller-hooks'
export const DEPLOYMENT = 'metacontroller-hooks'
/** The image scripts/build-image.sh tags, or $IMAGE as there. */
export const IMAGE = process.env.IMAGE ?? 'localhost/metacontroller-hooks:ci'
/**
 * Beside the rig's namespace, garbage-collector and service-account controllers: what turns a Deployment into
 * ready pods behind a Service (the node lifecycle controller lifts the not-ready taint the kubelet registers the node
 * with), and the PodDisruptionBudget's status.
 */
const CONTROLLERS = ['node-lifecycle-controller', 'deployment-controller', 'replicaset-controller', 'endpointslice-controller', 'disruption-controller']

export interface Pod extends KubeObject {
  status: {
    phase: string
    podIP?: string
    conditions?: Array<{ type: string, status: string }>
    containerStatuses?: Array<{ name: string, ready: boolean, restartCount: number, containerID?: string, lastState?: { terminated?: { reason: string } } }>
  }
}

export interface NodeEnvironment {
  cluster: Cluster
  node: Node
  postgres: PostgresProcess
  /** The hook Service's ClusterIP. */
  serviceIP: string
  /** kubectl against the cluster, from the repository's root. */
  kubectl: (args: string[], input?: string) => Promise<string>
  /** The hook server's pods. */
  hookPods: () => Promise<Pod[]>
  /** The JSON log lines of every hook pod's running container, as `kubectl logs` reads them through the kubelet. */
  hookLogLines: () => Promise<Array<Record<string, unknown>>>
  /** The copy of manifests/ that was applied. */
  manifests: string
  /** Milliseconds each part took to start. */
  timings: Record<string, number>
  stop: () => Promise<void>
}

export async function startNodeEnvironment (): Promise<NodeEnvironment> {
  const timings: Record<string, number> = {}
  const cleanups: Array<() => Promise<void>> = []
  const stop = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error) => { process.stderr.write(`[node] cleanup failed: ${String(error)}\n`) })
  }
  const time = async <T>(what: string, step: () => Promise<T>): Promise<T> => {
    const t0 = Date.now()
    try { return await step() } finally { timings[what] = Date.now() - t0 }
  }
  try {
    const work = await mkdtemp(join(tmpdir(), 'e2e-install-'))
    cleanups.push(async () => { await rm(work, { recursive: true, force: true }) })
    const postgres = await time('postgres', startPostgres)
    cleanups.push(postgres.remove)

    const hosts = join(work, 'hosts')
    writeFileSync(hosts, readFileSync('/etc/hosts'))
    const cluster = await time('cluster', async () => await startCluster({
      metacontrollerHostsFile: hosts,
      // The node's name resolves nowhere; its address is on the node's bridge.
      apiserverArgs: ['--kubelet-preferred-address-types=InternalIP'],
      // A repeated string-list flag adds to the list: the rig's own --controllers stay.
      controllerManagerArgs: [`--controllers=${CONTROLLERS.join(',')}`]
    }))
    cleanups.push(async () => { await cluster.stop() })
    const node = await time('node', async () => await startNode(cluster, { images: [IMAGE] }))
    cleanups.push(async () => { await node.stop() })
    const kubectl = async (args: string[], input?: string): Promise<string> => await cluster.kubectl(args, input)

    const manifests = join(work, 'manifests')
    const hookPods = async (): Promise<Pod[]> => (JSON.parse(await kubectl(['get', 'pods', '-n', NAMESPACE, '-l', `app.kubernetes.io/name=${DEPLOYMENT}`, '-o', 'json'])) as { items: Pod[] }).items
    await time('install', async () => {
      const relay = await node.forward(Number(new URL(postgres.connectionString).port))
      const url = new URL(postgres.connectionString)
      url.hostname = node.gateway
      url.port = String(relay)
      cpSync(join(root, 'manifests'), manifests, { recursive: true })
      setImage(join(manifests, 'server', 'kustomization.yaml'), IMAGE)
      setDatabaseUrl(join(manifests, 'server', 'database-secret.yaml'), url.toString())
      // Metacontroller v1.5.20's CRDs lack the hooks' `version` and `etag`: the API server drops them, with a warning.
      const strict = cluster.metacontroller !== undefined && metacontrollerSupportsHookV2(cluster.metacontroller.crds)
      await kubectl(['apply', '-k', manifests, `--validate=${strict ? 'strict' : 'warn'}`])
      await kubectl(['rollout', 'status', `deployment/${DEPLOYMENT}`, '-n', NAMESPACE, '--timeout=300s']).catch(async (error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}\n${await whyNotReady(kubectl, cluster, node)}`)
      })
      // `rollout status` has returned while a pod still read Ready=False: once, that pod's first readiness result came
      // a moment later, and no probe had failed in the kubelet's log.
      await eventually('every hook pod Ready', async () => {
        const pods = await hookPods()
        const unready = pods.filter((pod) => !podReady(pod)).map((pod) => pod.metadata.name)
        if (unready.length > 0) throw new Error(`not ready: ${unready.join(', ')}`)
      }, 60_000)
    })
    const serviceIP = (await kubectl(['get', 'service', DEPLOYMENT, '-n', NAMESPACE, '-o', 'jsonpath={.spec.clusterIP}'])).trim()
    // kube-proxy routes the Service to the pods a moment after they are ready.
    await time('service', async () => await eventually('the Service answers /readyz', async () => {
      const ready = await fetch(`http://${serviceIP}:8081/readyz`)
      if (ready.status !== 200) throw new Error(`/readyz answered ${ready.status}`)
    }, 60_000))
    // Rewritten in place: the bind mount holds this file's inode.
    writeFileSync(hosts, `${readFileSync('/etc/hosts', 'utf8')}\n${serviceIP} ${DEPLOYMENT}.${NAMESPACE}\n`)
    return {
      cluster,
      node,
      postgres,
      serviceIP,
      kubectl,
      hookPods,
      hookLogLines: async () => {
        const logs = await Promise.all((await hookPods()).map(async (pod) => await kubectl(['logs', '-n', NAMESPACE, pod.metadata.name, '--tail=-1']).catch(() => '')))
        return logs.join('\n').split('\n').flatMap((line) => {
          try {
            return line.startsWith('{') ? [JSON.parse(line) as Record<string, unknown>] : []
          } catch {
            return []
          }
        })
      },
      manifests,
      timings,
      stop
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/**
 * What a failed rollout leaves to read, for a run that only keeps its output: the hook pods' states, the cluster's
 * warnings, and the errors the kubelet and containerd logged.
 */
async function whyNotReady (kubectl: (args: string[]) => Promise<string>, cluster: Cluster, node: Node): Promise<string> {
  const attempt = async (args: string[]): Promise<string> => await kubectl(args).catch((error: unknown) => String(error))
  const errors = (file: string, pattern: RegExp): string => tail(file, 100_000).split('\n').filter((line) => pattern.test(line)).slice(-25).join('\n')
  const podNames = (await attempt(['get', 'pods', '-n', NAMESPACE, '-o', 'name'])).split('\n').filter((line) => line.startsWith('pod/')).map((line) => line.slice(4))
  return [
    '--- hook pods ---',
    await attempt(['get', 'pods', '-n', NAMESPACE, '-o', 'wide']),
    await attempt(['get', 'pods', '-n', NAMESPACE, '-o', 'jsonpath={range .items[*]}{.metadata.name}{" "}{.status.conditions}{" "}{.status.containerStatuses}{"\\n"}{end}']),
    ...await Promise.all(podNames.map(async (pod) => `--- ${pod}: the last lines of its containers, the one before and the one now ---\n${
      await attempt(['logs', '-n', NAMESPACE, pod, '--previous', '--tail=10'])}\n${await attempt(['logs', '-n', NAMESPACE, pod, '--tail=10'])}`)),
    '--- warnings ---',
    await attempt(['get', 'events', '--all-namespaces', '--field-selector=type=Warning', '--sort-by=.lastTimestamp']),
    '--- kubelet errors ---',
    errors(join(cluster.logsDir, 'node-kubelet.log'), /^E\d{4} /),
    '--- containerd errors ---',
    errors(join(cluster.logsDir, 'node-containerd.log'), /level=(error|fatal)/),
    `--- node ${node.name}: the full logs are in ${cluster.logsDir} ---`
  ].join('\n')
}

/** What `kustomize edit set image metacontroller-hooks=<image>` writes into the kustomization. */
function setImage (kustomization: string, image: string): void {
  const [, newName, newTag] = /^(.*?)(?::([^:/]+))?$/.exec(image) ?? []
  const document = parse(readFileSync(kustomization, 'utf8')) as Record<string, unknown>
  document.images = [{ name: 'metacontroller-hooks', newName, ...(newTag === undefined ? {} : { newTag }) }]
  writeFileSync(kustomization, stringify(document))
}

/** The database Secret with a URL of the user's, as its comment says to. */
function setDatabaseUrl (secretFile: string, url: string): void {
  const secret = parse(readFileSync(secretFile, 'utf8')) as { stringData: Record<string, string> }
  secret.stringData.DATABASE_URL = url
  writeFileSync(secretFile, stringify(secret))
}

/** Polls `check` every second until it returns without throwing; on timeout, says what the last attempt saw. */
export async function eventually<T> (what: string, check: () => Promise<T>, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: not so after ${timeoutMs / 1000} s; last: ${error instanceof Error ? error.message : String(error)}`)
    }
    await sleep(1000)
  }
}

/** SyncError events (Metacontroller's record of a failed hook call or apply) in a namespace, by message. */
export async function syncErrors (env: NodeEnvironment, namespace: string): Promise<string[]> {
  const events = JSON.parse(await env.kubectl(['get', 'events', '-n', namespace, '-o', 'json'])) as { items: Array<{ reason: string, message: string, count?: number }> }
  return events.items.filter((event) => event.reason === 'SyncError').map((event) => `${event.count ?? 1} × ${event.message}`)
}

/**
 * The SyncErrors of failed hook calls: those whose message says the hook failed. The others are Metacontroller's own
 * apply races, retried at once: a write conflict (409) with another writer, or a child its cache had not seen yet
 * ("already exists").
 */
function failedHookSyncErrors (events: string[]): string[] {
  return events.filter((event) => /hook failed/.test(event))
}

/**
 * Asserts that Metacontroller recorded no failed hook call in `namespace` (its SyncErrors) and logged none (its log);
 * returns every SyncError, its own apply races included.
 */
export async function assertNoFailedHookCalls (env: NodeEnvironment, namespace: string): Promise<string[]> {
  const events = await syncErrors(env, namespace)
  assert.deepEqual(failedHookSyncErrors(events), [], 'Metacontroller recorded failed hook calls')
  assert.deepEqual(failedHookCalls(env), [], 'Metacontroller logged failed calls to the hooks')
  return events
}

/** Metacontroller's log lines about a failed call to the hooks: those that name the Service's address. */
export function failedHookCalls (env: NodeEnvironment): string[] {
  return readFileSync(env.cluster.logFile('metacontroller'), 'utf8').split('\n')
    .filter((line) => /"level":"error"/.test(line) && line.includes(`${DEPLOYMENT}.${NAMESPACE}`))
}

/** The pod's Ready condition. */
export function podReady (pod: Pod): boolean {
  return pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
}
