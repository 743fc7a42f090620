/**
 * The bearer-token rotation of docs/operations.md, on a Metacontroller that authenticates to hooks (v4.16 and later: run the suite
 * with E2E_METACONTROLLER=<a v4 build>; the default v1.5.20 has no endpointConfigs, so this is skipped there).
 *
 * The hook server runs as a local process, so the kubelet's part is played here: the Secret's `accepted` is written
 * to the server's token file as the kubelet updates a Secret volume. Metacontroller reads the Secret itself, through
 * the bearer-token overlay's endpointConfigs (only the host differs: the hook server's local address), and the
 * docs/operations.md's "restart Metacontroller" is the rig restarting its process.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseAllDocuments } from 'yaml'
import { fingerprint } from '../../hooks/http/bearer-token.js'
import { startPostgres } from '../../dev/postgres-process.js'
import { SecretVolume } from '../helpers/secret-volume.js'
import { startServer } from '../../dev/server-process.js'
import { kustomize } from './environment.js'
import { startCluster, type Cluster } from './rig/cluster.js'
import { metacontrollerBuild, metacontrollerSupportsEndpointConfigs } from './rig/metacontroller.js'

const root = join(import.meta.dirname, '..', '..')
const metacontroller = metacontrollerBuild(process.env.E2E_BIN_DIR ?? join(root, '.cache', 'e2e-bin'))
const NAMESPACE = 'metacontroller-hooks'
const SECRET = 'metacontroller-hooks-token'

async function eventually (what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(500)
  }
}

it('bearer-token rotation as docs/operations.md gives it: both tokens accepted during the overlap, the old one refused after, no hook-server restart', {
  skip: !metacontrollerSupportsEndpointConfigs(metacontroller.crds) && `Metacontroller's CRDs (${metacontroller.crds}) have no endpointConfigs: it sends no token (v4.16 and later do; set E2E_METACONTROLLER)`,
  timeout: 300_000
}, async (t) => {
  const cleanups: Array<() => Promise<unknown>> = []
  t.after(async () => { for (const cleanup of cleanups.reverse()) await cleanup() })
  const postgres = await startPostgres()
  cleanups.push(postgres.remove)
  const documents = (dir: string): Promise<any[]> => kustomize(join(root, dir)).then((yaml) => parseAllDocuments(yaml).map((document) => document.toJS()))
  const folder = await mkdtemp(join(tmpdir(), 'e2e-bearer-'))
  cleanups.push(async () => { await rm(folder, { recursive: true, force: true }) })
  const podsetCrd = (await documents('manifests/crds')).find((crd) => crd.spec.names.kind === 'PodSet')
  const cluster: Cluster = await startCluster({ controllerManager: false })
  cleanups.push(cluster.stop)
  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(podsetCrd))
  await cluster.kubectl(['wait', '--for=condition=Established', 'crd/podsets.batch.tutorial.kubebuilder.io'])

  // docs/operations.md: the namespace and a Secret of generated tokens, before the overlay.
  await cluster.kubectl(['apply', '-k', join(root, 'manifests', 'namespace')])
  const secret = async (token: string, accepted: string[]): Promise<void> => {
    const yaml = await cluster.kubectl(['-n', NAMESPACE, 'create', 'secret', 'generic', SECRET, `--from-literal=token=${token}`, `--from-literal=accepted=${accepted.join('\n')}`, '--dry-run=client', '-o', 'yaml'])
    await cluster.kubectl(['apply', '-f', '-'], yaml)
  }
  const volume = new SecretVolume(folder, 'tokens')
  /** What the kubelet does to the hook server's volume when the Secret changes. */
  const kubeletSync = async (): Promise<void> => {
    await volume.write(Buffer.from(await cluster.kubectl(['-n', NAMESPACE, 'get', 'secret', SECRET, '-o', 'jsonpath={.data.accepted}']), 'base64').toString())
  }
  const [first, second] = [randomBytes(32).toString('hex'), randomBytes(32).toString('hex')]
  await secret(first, [first])
  await kubeletSync()

  const server = await startServer({ env: { DATABASE_URL: postgres.connectionString, HOOKS_BEARER_TOKEN_FILE: volume.file } })
  cleanups.push(server.stop)
  const logLines = (): any[] => server.output().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line))
  const accepted = (): number => logLines().filter((line) => line.controller === 'podset' && line.statusCode === 200).length
  const refused = (): number => logLines().filter((line) => line.statusCode === 401).length

  // The overlay's PodSet controller, its webhook and endpointConfigs host pointed at the local hook server.
  const controller = (await documents('manifests/overlays/bearer-token')).find((object) => object.kind === 'CompositeController' && object.metadata.name === 'podset')
  assert.deepEqual(controller.spec.endpointConfigs[0].authorization, { type: 'Bearer', secretRef: { name: SECRET, namespace: NAMESPACE, key: 'token' } })
  controller.spec.endpointConfigs[0].host = `127.0.0.1:${server.port}`
  controller.spec.hooks.sync.webhook = { url: `${server.url}/podset/sync`, timeout: '10s' }
  controller.spec.resyncPeriodSeconds = 5
  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(controller))

  await cluster.kubectl(['create', 'namespace', 'e2e-bearer'])
  await cluster.kubectl(['-n', 'e2e-bearer', 'apply', '-f', join(root, 'manifests', 'examples', 'podset.yaml')])
  const replicas = async (count: number): Promise<void> => {
    await cluster.kubectl(['-n', 'e2e-bearer', 'patch', 'podset', 'podset-sample', '--type=merge', '-p', JSON.stringify({ spec: { replicas: count } })])
    await eventually(`${count} pods`, async () => (await cluster.kubectl(['-n', 'e2e-bearer', 'get', 'pods', '-o', 'name'])).trim().split('\n').filter(Boolean).length === count)
  }
  await replicas(1)
  assert.ok(accepted() > 0 && refused() === 0, 'Metacontroller sends the first token')

  // 1. The hook server accepts both.
  await secret(first, [first, second])
  await kubeletSync()
  await server.logged(`bearer tokens reloaded: 2 accepted from HOOKS_BEARER_TOKEN_FILE ${volume.file} (fingerprints ${fingerprint(first)}, ${fingerprint(second)})`, 15_000)
  // 2. Metacontroller sends the new one once it has re-read the Secret, at its restart.
  await secret(second, [first, second])
  await cluster.restartMetacontroller()
  await replicas(2)
  // 3. The old token is refused.
  await secret(second, [second])
  await kubeletSync()
  await server.logged(`bearer tokens reloaded: 1 accepted from HOOKS_BEARER_TOKEN_FILE ${volume.file} (fingerprints ${fingerprint(second)})`, 15_000)
  const before = accepted()
  await replicas(3)
  assert.ok(accepted() > before, 'Metacontroller\'s calls after the rotation are accepted')
  const refusedCalls = refused()
  assert.equal(refusedCalls, 0, 'no hook call was refused at any step')

  const withOld = await fetch(`${server.url}/podset/sync`, { method: 'POST', headers: { authorization: `Bearer ${first}`, 'content-type': 'application/json' }, body: '{}' })
  assert.equal(withOld.status, 401)
  assert.ok(server.running())
  assert.equal(server.output().split('hook server ready').length, 2, 'the hook server was never restarted')
  process.stderr.write(`[e2e] bearer-token rotation on ${metacontroller.binary}: ${accepted()} hook calls accepted, ${refusedCalls} refused\n`)
})
