/**
 * The install as the README and docs/operations.md give it, against a real kube-apiserver: the rig's, holding Metacontroller's CRDs as a
 * cluster does after step 1 of the install. No controller manager, no Metacontroller: only what the API server
 * accepts is checked here (operators.test.ts runs the product).
 *
 * - A server-side dry-run (`kubectl apply -k … --dry-run=server`) of manifests/, manifests/postgres/ and every
 *   overlay, so that an object a real cluster would refuse fails the suite; the monitoring overlay's PodMonitor and
 *   PrometheusRule against the Prometheus Operator's CRDs, installed beside Metacontroller's. A dry-run creates nothing, so the
 *   namespaced objects of a first install would all fail on their missing namespace: the namespace is created first
 *   (manifests/namespace/), for real, and everything is dry-run after it.
 * - Each documented order of applying, for real, on a fresh API server each.
 * - docs/monitoring.md's step 3 in a kustomization of the monitoring overlay, built by kubectl: its label lands on
 *   the monitoring objects alone.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { parseAllDocuments } from 'yaml'
import { startCluster, type Cluster } from './rig/cluster.js'
import { metacontrollerBuild, metacontrollerSupportsEndpointConfigs, metacontrollerSupportsHookV2 } from './rig/metacontroller.js'

const root = join(import.meta.dirname, '..', '..')
const binDir = process.env.E2E_BIN_DIR ?? join(root, '.cache', 'e2e-bin')
const metacontroller = metacontrollerBuild(binDir)
const overlays = readdirSync(join(root, 'manifests', 'overlays')).map((overlay) => `manifests/overlays/${overlay}/`)
/** The Prometheus Operator's CRDs that the monitoring component's objects need, as scripts/build-e2e-binaries.sh fetches them. */
const prometheusOperatorCrds = ['podmonitors', 'prometheusrules'].map((kind) => join(binDir, 'prometheus-operator-crds', `monitoring.coreos.com_${kind}.yaml`))

/**
 * The fields of the manifests that Metacontroller's CRDs lack when the rig runs a Metacontroller older than the
 * product needs (v1.5.20 by default: see docs/testing.md, "Which Metacontroller"). kubectl is then told to warn of unknown fields
 * instead of refusing them, and a warning about any other field still fails.
 */
const newerFields = [
  // Webhook ETags (v4.3) came before hook v2 (v4.15), so a Metacontroller without v2 may lack both.
  ...metacontrollerSupportsHookV2(metacontroller.crds) ? [] : ['spec.hooks.sync.version', 'spec.hooks.finalize.version', 'spec.hooks.sync.webhook.etag'],
  ...metacontrollerSupportsEndpointConfigs(metacontroller.crds) ? [] : ['spec.endpointConfigs']
]

interface Run { code: number | null, stdout: string, stderr: string }

/** kubectl against the cluster, from the repository's root as a user types it; stdout and stderr both kept. */
async function kubectl (cluster: Cluster, args: string[]): Promise<Run> {
  const child = spawn(join(cluster.binDir, 'kubectl'), ['--kubeconfig', cluster.kubeconfig, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stdout, stderr }
}

/** `kubectl apply -k <dir>`: accepted, with no warning but those of `newerFields`. */
async function apply (cluster: Cluster, dir: string, ...flags: string[]): Promise<string> {
  const run = await kubectl(cluster, ['apply', '-k', dir, `--validate=${newerFields.length === 0 ? 'strict' : 'warn'}`, ...flags])
  const what = `kubectl apply -k ${dir} ${flags.join(' ')}`
  assert.equal(run.code, 0, `${what} was refused:\n${run.stderr}`)
  const unexpected = run.stderr.split('\n').filter((line) => line !== '' && !newerFields.some((field) => line === `Warning: unknown field "${field}"`))
  assert.deepEqual(unexpected, [], `${what} warned`)
  return run.stdout
}

async function withCluster (body: (cluster: Cluster) => Promise<void>): Promise<void> {
  const cluster = await startCluster({ controllerManager: false, metacontroller: false, manifests: [metacontroller.crds, ...prometheusOperatorCrds] })
  try {
    await body(cluster)
  } finally {
    await cluster.stop()
  }
}

/** The yaml block of step 3 of docs/monitoring.md's install: what a reader adds to the kustomization they apply. */
function monitoringLabelBlock (): string {
  const page = readFileSync(join(root, 'docs', 'monitoring.md'), 'utf8')
  const step = /^3\. Make your Prometheus select them\.[\s\S]*?```yaml\n([\s\S]*?)^ *```$/m.exec(page)?.[1]
  assert.ok(step !== undefined, 'docs/monitoring.md has step 3 with a yaml block')
  return step.replace(/^ {3}/gm, '')
}

it('docs/monitoring.md step 3, added to a kustomization of the monitoring overlay, labels its PodMonitor and PrometheusRule alone', async () => {
  // Within the repository: kustomize takes no resource from outside the kustomization's own root.
  const dir = mkdtempSync(join(root, '.cache', 'monitoring-label-'))
  try {
    writeFileSync(join(dir, 'kustomization.yaml'), `resources:\n  - ../../manifests/overlays/monitoring\n${monitoringLabelBlock()}`)
    const built = await new Promise<Run>((resolve) => {
      const child = spawn(join(binDir, 'kubectl'), ['kustomize', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
      child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
      child.on('close', (code) => { resolve({ code, stdout, stderr }) })
    })
    assert.equal(built.code, 0, built.stderr)
    const objects = parseAllDocuments(built.stdout).map((document) => document.toJS() as { kind: string, metadata: { labels?: Record<string, string> } })
    assert.ok(objects.length > 10, `${objects.length} objects`)
    assert.deepEqual(objects.filter((object) => object.metadata.labels?.release === 'kube-prometheus-stack').map((object) => object.kind).sort(), ['PodMonitor', 'PrometheusRule'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

describe(`the install on a real kube-apiserver (Metacontroller CRDs of ${metacontroller.version ?? metacontroller.binary}${newerFields.length === 0 ? '' : `, which lack ${newerFields.join(', ')}`})`, () => {
  it('server-side dry-run of manifests/, manifests/postgres/ and every overlay, once their namespace exists', { timeout: 120_000 }, async () => {
    await withCluster(async (cluster) => {
      await apply(cluster, 'manifests/namespace/')
      for (const dir of ['manifests/', 'manifests/postgres/', ...overlays]) {
        const output = await apply(cluster, dir, '--dry-run=server')
        const kinds = dir === 'manifests/postgres/'
          ? ['secret', 'service', 'statefulset.apps']
          : ['deployment.apps', 'poddisruptionbudget.policy', 'networkpolicy.networking.k8s.io', 'service', 'compositecontroller.metacontroller.k8s.io',
              ...dir === 'manifests/overlays/monitoring/' ? ['podmonitor.monitoring.coreos.com', 'prometheusrule.monitoring.coreos.com', 'configmap'] : []]
        for (const kind of kinds) {
          assert.match(output, new RegExp(`^${kind.replaceAll('.', '\\.')}/\\S+ created \\(server dry run\\)$`, 'm'), `${dir}: ${output}`)
        }
      }
      assert.equal((await kubectl(cluster, ['get', 'deployments,secrets,statefulsets', '-A', '-o', 'name'])).stdout, '', 'a dry-run created nothing')
    })
  })

  it('a fresh cluster, the documented order: manifests/postgres/ (step 3), then manifests/ (step 4)', { timeout: 120_000 }, async () => {
    await withCluster(async (cluster) => {
      await apply(cluster, 'manifests/postgres/')
      await apply(cluster, 'manifests/')
      const objects = (await kubectl(cluster, ['-n', 'metacontroller-hooks', 'get', 'statefulsets,deployments', '-o', 'name'])).stdout
      assert.deepEqual(objects.trim().split('\n').sort(), ['deployment.apps/metacontroller-hooks', 'statefulset.apps/postgres'])
    })
  })

  it('a fresh cluster, bearer token: the namespace, a generated Secret, the overlay; re-applied, it keeps the token; then manifests/postgres/', { timeout: 120_000 }, async () => {
    await withCluster(async (cluster) => {
      const token = 'f'.repeat(64)
      await apply(cluster, 'manifests/namespace/')
      const created = await kubectl(cluster, ['-n', 'metacontroller-hooks', 'create', 'secret', 'generic', 'metacontroller-hooks-token', '--save-config', `--from-literal=token=${token}`, `--from-literal=accepted=${token}`])
      assert.equal(created.code, 0, created.stderr)
      await apply(cluster, 'manifests/overlays/bearer-token/')
      await apply(cluster, 'manifests/overlays/bearer-token/')
      await apply(cluster, 'manifests/postgres/')
      const secret = await kubectl(cluster, ['-n', 'metacontroller-hooks', 'get', 'secret', 'metacontroller-hooks-token', '-o', 'jsonpath={.data.token} {.data.accepted}'])
      assert.equal(secret.stdout, `${Buffer.from(token).toString('base64')} ${Buffer.from(token).toString('base64')}`, 'an upgrade leaves the token as it was')
    })
  })
})
