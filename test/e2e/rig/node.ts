/**
 * A real node for the rig's control plane (./cluster.ts): containerd with the CRI plugin and runc, a CNI bridge,
 * kubelet, kube-scheduler and kube-proxy (iptables mode), so that Deployments run as pods in real cgroups and
 * Services route through real iptables rules.
 *
 *   const node = await startNode(cluster, { images: ['localhost/metacontroller-hooks:ci'] })
 *   try { ... } finally { await node.stop() }
 *
 * Everything the node writes is in a folder of its own (containerd's root, state and socket, the CNI
 * configuration and address leases, the kubelet's root), its cgroups are under a cgroup root of its own in every
 * cgroup v1 hierarchy, and its pods sit on a bridge of its own whose gateway is the node's address: the kubelet
 * listens there, and a pod reaches a service of the host through it (`forward`). Nothing is pulled: the pause image
 * is made with buildah from the product image's base, and every image is exported from buildah's store and imported
 * into containerd. Needs root, Linux with cgroup v1, buildah, containerd, runc, the CNI plugins and iptables.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePorts, SERVICE_CIDR, type Cluster } from './cluster.js'
import { DaemonError, run, startDaemon, waitReady, type Daemon } from './process.js'

/** The pod network: a /16 that is neither the rig's service range (SERVICE_CIDR) nor the machine's own. */
const POD_CIDR = '10.85.0.0/16'
const GATEWAY = '10.85.0.1'
const CNI_BIN_DIR = '/usr/lib/cni'
const CGROUP_ROOT = '/sys/fs/cgroup'
/** The Dockerfile's base, which scripts/build-base-image.sh assembles: the pause image is made from it. */
const BASE_IMAGE = 'docker.io/library/node:20-bookworm-slim'
const PAUSE_IMAGE = 'localhost/e2e-pause:bin-sleep'
/** How the node's folder (in the temporary folder) and cgroup root (`<prefix><pid>-<n>`) begin, and its bridge. */
const NODE_PREFIX = 'e2e-node-'
const BRIDGE_PREFIX = 'e2ebr'
/**
 * A connection to a ClusterIP that kube-proxy has not translated (its rules are being rewritten, or have no endpoint
 * yet) is refused, as in a cluster, instead of leaving by the default route: on these machines a proxy there answers
 * any port 80 with an empty 404, and a client that keeps that connection alive (Metacontroller) gets 404s for minutes.
 * Translated connections are past the filter table's OUTPUT with a pod's address.
 */
const UNTRANSLATED_SERVICE_RULE = ['OUTPUT', '-d', SERVICE_CIDR, '-m', 'comment', '--comment', 'e2e-node: untranslated ClusterIP', '-j', 'REJECT']

export interface NodeOptions {
  /** Images of buildah's store, imported into the node's containerd before the kubelet starts. */
  images?: string[]
  /** Time allowed for each daemon to become ready. Default 120 s. */
  readyTimeoutMs?: number
}

export interface ContainerUsage {
  /** cpuacct.usage, in seconds. */
  cpuSeconds: number
  /** memory.usage_in_bytes now, and memory.max_usage_in_bytes since the container started or the last resetPeak. */
  memoryBytes: number
  memoryPeakBytes: number
  /** The memory.limit_in_bytes runc set. */
  memoryLimitBytes: number
  /** Processes the kernel's OOM killer ended in this cgroup (memory.oom_control's oom_kill). */
  oomKills: number
}

export interface Node {
  name: string
  /** The node's address on the pod network: where the kubelet listens and pods reach the host. */
  gateway: string
  dir: string
  /** Imports an image of buildah's store into containerd. */
  importImage: (image: string) => Promise<void>
  /** Serves 127.0.0.1:`port` of the host to the pods at `<gateway>:<returned port>` (a TCP relay). */
  forward: (port: number) => Promise<number>
  /** The cgroup usage of one container of a pod (its `containerID` from the pod's status). */
  containerUsage: (containerId: string) => ContainerUsage
  /** Signals every process of a container, as a crash or the OOM killer would end them. */
  signalContainer: (containerId: string, signal: NodeJS.Signals) => void
  /** Resets memory.max_usage_in_bytes of a container. */
  resetPeak: (containerId: string) => void
  /** Throws (with the log's tail) when a daemon of the node has exited. */
  assertRunning: () => void
  stop: () => Promise<void>
}

let nodeCount = 0

export async function startNode (cluster: Cluster, options: NodeOptions = {}): Promise<Node> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000
  const n = ++nodeCount
  const name = `${NODE_PREFIX}${process.pid}-${n}`
  const bridge = `${BRIDGE_PREFIX}${process.pid % 10_000}${n}`.slice(0, 15)
  await clearLeftovers(cluster.binDir)
  const dir = await mkdtemp(join(tmpdir(), NODE_PREFIX))
  const cgroupName = name
  const socket = join(dir, 'containerd.sock')
  const log = (component: string): string => join(cluster.logsDir, `node-${component}.log`)
  const daemons: Daemon[] = []
  const relays: Server[] = []
  const relayed = new Set<Socket>()
  const ctr = async (args: string[]): Promise<string> => await run('ctr', ['--address', socket, '--namespace', 'k8s.io', ...args])

  const assertRunning = (): void => {
    for (const daemon of daemons) {
      if (daemon.exited !== undefined) throw new DaemonError(daemon.name, `exited (code ${daemon.exited.code}, signal ${daemon.exited.signal})`, daemon.logFile)
    }
  }

  let stopped: Promise<void> | undefined
  const stop = async (): Promise<void> => {
    stopped ??= teardown({ cluster, name, dir, bridge, cgroupName, daemons, relays, relayed, ctr })
    await stopped
  }

  try {
    for (const sub of ['containerd/root', 'containerd/state', 'cni/conf', 'cni/ipam', 'kubelet/root', 'kubelet/certs']) mkdirSync(join(dir, sub), { recursive: true })

    // The bridge exists before the kubelet, whose address it carries; the CNI bridge plugin takes it as it is.
    await run('ip', ['link', 'add', bridge, 'type', 'bridge'])
    await run('ip', ['addr', 'add', `${GATEWAY}/16`, 'dev', bridge])
    await run('ip', ['link', 'set', bridge, 'up'])
    await run('iptables', ['-I', ...UNTRANSLATED_SERVICE_RULE])
    createCgroupRoot(cgroupName)

    // --- containerd -------------------------------------------------------------------------------------------------
    writeFileSync(join(dir, 'cni', 'conf', '10-e2e.conflist'), JSON.stringify({
      cniVersion: '0.4.0',
      name: 'e2e',
      plugins: [{
        type: 'bridge',
        bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_CIDR, gateway: GATEWAY }]], dataDir: join(dir, 'cni', 'ipam') }
      }]
    }, null, 2))
    const [streamPort] = await freePorts(1) as [number]
    writeFileSync(join(dir, 'containerd.toml'), `version = 2
root = "${join(dir, 'containerd', 'root')}"
state = "${join(dir, 'containerd', 'state')}"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "${socket}"

[ttrpc]
  address = "${socket}.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "${streamPort}"
  enable_selinux = false
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  # No CAP_SYS_RESOURCE on these machines: runc cannot set a sandbox's oom_score_adj of -998 below containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${join(dir, 'cni', 'conf')}"
`)
    // Nothing is pulled: every pull goes to a proxy that is not there, and fails at once.
    const noPulls = Object.fromEntries(['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'].map((name) => [name, 'http://127.0.0.1:9']))
    const containerd = startDaemon('containerd', 'containerd', ['--config', join(dir, 'containerd.toml')], { logFile: log('containerd'), env: { ...noPulls, NO_PROXY: '', no_proxy: '' } })
    daemons.push(containerd)
    await waitReady(containerd, readyTimeoutMs, async () => { await ctr(['version']); return true })

    const importImage = async (image: string): Promise<void> => {
      const archive = join(dir, 'image.tar')
      await run('buildah', ['push', '--quiet', image, `docker-archive:${archive}:${image}`])
      await ctr(['images', 'import', '--snapshotter', 'overlayfs', archive])
      await rm(archive, { force: true })
    }
    await buildPauseImage()
    for (const image of [PAUSE_IMAGE, ...options.images ?? []]) await importImage(image)

    // --- kubelet ------------------------------------------------------------------------------------------------------
    const [kubeletPort, kubeletHealthz, schedulerPort, proxyHealthz, proxyMetrics] = await freePorts(5) as [number, number, number, number, number]
    writeFileSync(join(dir, 'kubelet.json'), JSON.stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: GATEWAY,
      port: kubeletPort,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: kubeletHealthz,
      // The API server calls it (logs, exec) without a client certificate; it listens on the node's bridge only.
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      containerRuntimeEndpoint: `unix://${socket}`,
      cgroupDriver: 'cgroupfs',
      cgroupRoot: `/${cgroupName}`,
      // This machine has cgroup v1 only, which the kubelet refuses by default since 1.35.
      failCgroupV1: false,
      failSwapOn: false,
      resolvConf: '/etc/resolv.conf',
      // The machine's disk and memory are shared: no eviction, no image garbage collection.
      evictionHard: { 'memory.available': '0%', 'nodefs.available': '0%', 'imagefs.available': '0%', 'nodefs.inodesFree': '0%' },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      serializeImagePulls: false,
      nodeStatusUpdateFrequency: '5s',
      syncFrequency: '10s'
    }, null, 2))
    const kubelet = startDaemon('kubelet', join(cluster.binDir, 'kubelet'), [
      `--config=${join(dir, 'kubelet.json')}`,
      `--kubeconfig=${cluster.kubeconfig}`,
      `--root-dir=${join(dir, 'kubelet', 'root')}`,
      `--cert-dir=${join(dir, 'kubelet', 'certs')}`,
      `--hostname-override=${name}`,
      `--node-ip=${GATEWAY}`,
      '--v=2'
    ], { logFile: log('kubelet') })
    daemons.push(kubelet)
    await waitReady(kubelet, readyTimeoutMs, async () =>
      (await cluster.kubectl(['get', 'node', name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])) === 'True')

    // --- kube-scheduler and kube-proxy --------------------------------------------------------------------------------
    const scheduler = startDaemon('kube-scheduler', join(cluster.binDir, 'kube-scheduler'), [
      `--kubeconfig=${cluster.kubeconfig}`,
      `--authentication-kubeconfig=${cluster.kubeconfig}`,
      `--authorization-kubeconfig=${cluster.kubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${schedulerPort}`,
      `--cert-dir=${join(dir, 'scheduler-certs')}`
    ], { logFile: log('kube-scheduler') })
    daemons.push(scheduler)
    await waitReady(scheduler, readyTimeoutMs, async () => (await httpStatus(`https://127.0.0.1:${schedulerPort}/healthz`)) === 200)

    const proxyConfig = join(dir, 'kube-proxy.json')
    writeFileSync(proxyConfig, JSON.stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: cluster.kubeconfig },
      hostnameOverride: name,
      mode: 'iptables',
      clusterCIDR: POD_CIDR,
      healthzBindAddress: `127.0.0.1:${proxyHealthz}`,
      metricsBindAddress: `127.0.0.1:${proxyMetrics}`,
      // Zero leaves the machine's conntrack settings as they are.
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
      iptables: { localhostNodePorts: false, syncPeriod: '30s', minSyncPeriod: '0s' }
    }, null, 2))
    const proxy = startDaemon('kube-proxy', join(cluster.binDir, 'kube-proxy'), [`--config=${proxyConfig}`, '--v=2'], { logFile: log('kube-proxy') })
    daemons.push(proxy)
    await waitReady(proxy, readyTimeoutMs, async () => (await httpStatus(`http://127.0.0.1:${proxyHealthz}/healthz`)) === 200)

    const memoryDir = (containerId: string): string => containerCgroup('memory', cgroupName, containerId)
    return {
      name,
      gateway: GATEWAY,
      dir,
      importImage,
      forward: async (port) => {
        const server = createServer((socket) => {
          const upstream = createConnection({ host: '127.0.0.1', port })
          for (const end of [socket, upstream]) {
            relayed.add(end)
            end.on('close', () => relayed.delete(end))
          }
          socket.pipe(upstream).pipe(socket)
          socket.on('error', () => upstream.destroy())
          upstream.on('error', () => socket.destroy())
        })
        relays.push(server)
        await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, GATEWAY, resolve) })
        const address = server.address()
        if (address === null || typeof address === 'string') throw new DaemonError('relay', 'no port')
        return address.port
      },
      containerUsage: (containerId) => {
        const memory = memoryDir(containerId)
        const number = (file: string): number => Number(readFileSync(file, 'utf8').trim())
        return {
          cpuSeconds: number(join(containerCgroup('cpuacct', cgroupName, containerId), 'cpuacct.usage')) / 1e9,
          memoryBytes: number(join(memory, 'memory.usage_in_bytes')),
          memoryPeakBytes: number(join(memory, 'memory.max_usage_in_bytes')),
          memoryLimitBytes: number(join(memory, 'memory.limit_in_bytes')),
          oomKills: Number(/^oom_kill (\d+)$/m.exec(readFileSync(join(memory, 'memory.oom_control'), 'utf8'))?.[1] ?? 0)
        }
      },
      signalContainer: (containerId, signal) => {
        for (const pid of readFileSync(join(memoryDir(containerId), 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) process.kill(Number(pid), signal)
      },
      resetPeak: (containerId) => { writeFileSync(join(memoryDir(containerId), 'memory.max_usage_in_bytes'), '0') },
      assertRunning,
      stop
    }
  } catch (error) {
    await stop().catch((cleanup) => { process.stderr.write(`[node] cleanup after a failed start: ${String(cleanup)}\n`) })
    throw error
  }
}

/**
 * The pause image: the base image's `sleep infinity`, by its path since the base sets no PATH (Docker would add one;
 * containerd does not); containerd stops a sandbox with SIGKILL.
 */
async function buildPauseImage (): Promise<void> {
  if ((await run('buildah', ['images', '--quiet', PAUSE_IMAGE]).catch(() => '')).trim() !== '') return
  const container = (await run('buildah', ['from', '--pull=never', '--quiet', BASE_IMAGE])).trim()
  try {
    await run('buildah', ['config', '--entrypoint', '["/bin/sleep", "infinity"]', '--cmd', '', '--user', '65535:65535', container])
    await run('buildah', ['commit', '--quiet', container, PAUSE_IMAGE])
  } finally {
    await run('buildah', ['rm', container]).catch(() => '')
  }
}

/** The cgroup v1 hierarchies the kubelet and runc use; the kubelet also makes its folders in the empty v2 one. */
function hierarchies ({ unified = false } = {}): string[] {
  return readdirSync(CGROUP_ROOT).filter((entry) => (unified || entry !== 'unified') && existsSync(join(CGROUP_ROOT, entry, 'cgroup.procs')))
}

function createCgroupRoot (cgroupName: string): void {
  for (const hierarchy of hierarchies()) {
    const path = join(CGROUP_ROOT, hierarchy, cgroupName)
    mkdirSync(path, { recursive: true })
    if (hierarchy === 'cpuset') {
      // A new cpuset has no CPUs or memory nodes until given its parent's.
      for (const file of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(join(path, file), readFileSync(join(CGROUP_ROOT, hierarchy, file)))
    }
  }
}

/** The cgroup folder of a container in one hierarchy, wherever its pod's QoS class put it under the node's root. */
function containerCgroup (hierarchy: string, cgroupName: string, containerId: string): string {
  const id = containerId.replace(/^containerd:\/\//, '')
  const kubepods = join(CGROUP_ROOT, hierarchy, cgroupName, 'kubepods')
  for (const qos of ['burstable', 'besteffort', '']) {
    const base = join(kubepods, qos)
    if (!existsSync(base)) continue
    for (const pod of readdirSync(base).filter((entry) => entry.startsWith('pod'))) {
      if (existsSync(join(base, pod, id))) return join(base, pod, id)
    }
  }
  throw new DaemonError('kubelet', `no cgroup of container ${id} under ${kubepods}`)
}

async function httpStatus (url: string): Promise<number> {
  const { request } = url.startsWith('https:') ? await import('node:https') : await import('node:http')
  return await new Promise((resolve) => {
    const req = request(url, { timeout: 2_000, rejectUnauthorized: false }, (res) => { res.resume(); resolve(res.statusCode ?? 0) })
    req.on('timeout', () => { req.destroy() })
    req.on('error', () => { resolve(0) })
    req.end()
  })
}

interface Teardown {
  cluster: Cluster
  name: string
  dir: string
  bridge: string
  cgroupName: string
  daemons: Daemon[]
  relays: Server[]
  /** A pod gone with its network never closes its connection: they are destroyed, or they keep this process alive. */
  relayed: Set<Socket>
  ctr: (args: string[]) => Promise<string>
}

/**
 * Leaves the machine as it was: the pods stopped by the kubelet (their sandboxes' networks released), the daemons
 * stopped, kube-proxy's iptables rules removed, then whatever survived removed by hand: containers, their shims,
 * mounts (the pods' network namespaces among them), cgroups, the bridge and the folder.
 */
async function teardown (t: Teardown): Promise<void> {
  const problems: string[] = []
  const attempt = async (what: string, step: () => Promise<unknown>): Promise<void> => {
    try { await step() } catch (error) { problems.push(`${what}: ${error instanceof Error ? error.message : String(error)}`) }
  }
  const byName = (name: string): Daemon | undefined => t.daemons.find((daemon) => daemon.name === name)
  const kubelet = byName('kubelet')
  if (kubelet !== undefined && kubelet.exited === undefined) {
    await attempt('cordon and empty the node', async () => {
      await t.cluster.kubectl(['cordon', t.name])
      await t.cluster.kubectl(['delete', 'pods', '--all-namespaces', `--field-selector=spec.nodeName=${t.name}`, '--grace-period=0', '--force', '--wait=false'])
      const deadline = Date.now() + 60_000
      while (Date.now() < deadline && (await t.ctr(['tasks', 'ls', '--quiet'])).trim() !== '') await sleep(500)
    })
  }
  for (const name of ['kube-scheduler', 'kube-proxy', 'kubelet']) await attempt(`stop ${name}`, async () => { await byName(name)?.stop() })
  const proxy = byName('kube-proxy')
  if (proxy !== undefined) {
    await attempt('kube-proxy --cleanup', async () => await run(join(t.cluster.binDir, 'kube-proxy'), ['--cleanup', `--config=${join(t.dir, 'kube-proxy.json')}`]))
  }
  const containerd = byName('containerd')
  if (containerd !== undefined && containerd.exited === undefined) {
    await attempt('remove the containers left', async () => {
      for (const id of (await t.ctr(['tasks', 'ls', '--quiet'])).split('\n').filter(Boolean)) {
        await t.ctr(['tasks', 'kill', '--signal', 'SIGKILL', id]).catch(() => '')
        await t.ctr(['tasks', 'delete', '--force', id]).catch(() => '')
      }
    })
    await attempt('stop containerd', async () => { await containerd.stop() })
  }
  for (const relay of t.relays) relay.close()
  for (const socket of t.relayed) socket.destroy()
  await attempt('kill what is left in the node\'s cgroups', async () => { killCgroupProcesses(t.cgroupName) })
  await attempt('kill the shims', async () => { killProcessesNaming(`${t.dir}/`) })
  await attempt('unmount', async () => { await unmountUnder(`${t.dir}/`) })
  await attempt('remove the cgroups', async () => { await removeCgroups(t.cgroupName) })
  await attempt('remove the kubelet\'s iptables chains', removeKubeletChains)
  await attempt('remove the rule for untranslated ClusterIPs', removeUntranslatedServiceRules)
  await attempt('remove the bridge', async () => await run('ip', ['link', 'del', t.bridge]))
  await attempt('remove the folder', async () => { await rm(t.dir, { recursive: true, force: true }) })
  if (problems.length > 0) throw new DaemonError('node', `teardown left work undone:\n${problems.join('\n')}`)
}

/**
 * Clears what the nodes of killed runs left on the machine, since their teardown never ran: their processes (the
 * daemons, the shims, the pods' containers), mounts, cgroups, folders and bridges, and kube-proxy's and the kubelet's
 * iptables rules, any of which breaks the next node (a second bridge with the gateway's address takes its pods'
 * traffic). A node of another process still running is left alone, and this one refuses to start: two nodes cannot
 * share the pod network.
 */
async function clearLeftovers (binDir: string): Promise<void> {
  const cgroups = readdirSync(join(CGROUP_ROOT, 'memory')).filter((entry) => entry.startsWith(NODE_PREFIX))
  const running = cgroups.map((entry) => Number(entry.slice(NODE_PREFIX.length).split('-')[0])).filter((pid) => pid !== process.pid && isAlive(pid))
  if (running.length > 0) {
    throw new DaemonError('node', `process ${running[0]} runs a node on the pod network ${POD_CIDR}, which a second node cannot share: run one node tier at a time`)
  }
  const dirs = readdirSync(tmpdir()).filter((entry) => entry.startsWith(NODE_PREFIX)).map((entry) => join(tmpdir(), entry))
  const bridges = (await run('ip', ['-o', 'link', 'show', 'type', 'bridge'])).split('\n')
    .map((line) => /^\d+: ([^:@]+)/.exec(line)?.[1] ?? '').filter((link) => link.startsWith(BRIDGE_PREFIX))
  if (cgroups.length + dirs.length + bridges.length > 0) {
    process.stderr.write(`[node] clearing what killed runs left: ${[...cgroups, ...dirs, ...bridges].join(', ')}\n`)
    killProcessesNaming(join(tmpdir(), NODE_PREFIX))
    for (const cgroup of cgroups) killCgroupProcesses(cgroup)
    await unmountUnder(join(tmpdir(), NODE_PREFIX))
    for (const cgroup of cgroups) await removeCgroups(cgroup)
    await run(join(binDir, 'kube-proxy'), ['--cleanup']).catch(() => '')
    await removeKubeletChains()
    await removeUntranslatedServiceRules()
    for (const link of bridges) await run('ip', ['link', 'del', link])
    for (const leftover of dirs) await rm(leftover, { recursive: true, force: true })
  }
  const routes = (await run('ip', ['route', 'show', POD_CIDR])).trim()
  if (routes !== '') throw new DaemonError('node', `the pod network ${POD_CIDR} is already routed (${routes}): remove that route, or the node's pods are unreachable`)
}

function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** SIGKILLs every process whose command line contains `text` (a node's folder: its daemons and shims). */
function killProcessesNaming (text: string): void {
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)) {
    const cmdline = (() => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8') } catch { return '' } })()
    if (cmdline.includes(text)) {
      try { process.kill(Number(pid), 'SIGKILL') } catch { /* gone */ }
    }
  }
}

/** Lazily unmounts, deepest first, whatever is mounted at a path that begins with `prefix` (the pods' network namespaces). */
async function unmountUnder (prefix: string): Promise<void> {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((line) => line.split(' ')[4] ?? '').filter((point) => point.startsWith(prefix))
  for (const point of mounts.reverse()) await run('umount', ['--lazy', point]).catch(() => '')
}

/** The chains the kubelet adds to every table (KUBE-FIREWALL drops outside packets to 127.0.0.0/8). */
async function removeKubeletChains (): Promise<void> {
  for (const iptables of ['iptables', 'ip6tables']) {
    for (const hook of ['INPUT', 'OUTPUT']) await run(iptables, ['-D', hook, '-j', 'KUBE-FIREWALL']).catch(() => '')
    for (const table of ['filter', 'nat', 'mangle']) {
      for (const chain of ['KUBE-FIREWALL', 'KUBE-KUBELET-CANARY', 'KUBE-IPTABLES-HINT']) {
        await run(iptables, ['-t', table, '-F', chain]).catch(() => '')
        await run(iptables, ['-t', table, '-X', chain]).catch(() => '')
      }
    }
  }
}

/** Every copy of UNTRANSLATED_SERVICE_RULE: a node adds one, a killed run may have left others. */
async function removeUntranslatedServiceRules (): Promise<void> {
  for (;;) {
    if (await run('iptables', ['-D', ...UNTRANSLATED_SERVICE_RULE]).then(() => false, () => true)) return
  }
}

function cgroupDirs (cgroupName: string): string[] {
  const dirs: string[] = []
  const walk = (path: string): void => {
    dirs.push(path)
    for (const entry of readdirSync(path, { withFileTypes: true })) if (entry.isDirectory()) walk(join(path, entry.name))
  }
  for (const hierarchy of hierarchies({ unified: true })) {
    const root = join(CGROUP_ROOT, hierarchy, cgroupName)
    if (existsSync(root)) walk(root)
  }
  return dirs
}

function killCgroupProcesses (cgroupName: string): void {
  for (const path of cgroupDirs(cgroupName)) {
    for (const pid of readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      try { process.kill(Number(pid), 'SIGKILL') } catch { /* gone */ }
    }
  }
}

/** rmdir, deepest first; a cgroup whose last process is still exiting refuses for a moment. */
async function removeCgroups (cgroupName: string): Promise<void> {
  for (let round = 0; ; round++) {
    const left = cgroupDirs(cgroupName).reverse().filter((path) => {
      try { rmdirSync(path); return false } catch { return true }
    })
    if (left.length === 0) return
    if (round === 20) throw new Error(`cannot remove ${left.join(', ')}`)
    await sleep(250)
  }
}
