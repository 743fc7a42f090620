import assert from 'node:assert/strict'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { parse, parseAllDocuments } from 'yaml'
import { controllers } from '../hooks/controllers.js'
import { HOOK_SERVICE } from '../dev/manifests.js'
import { deployment as hookDeployment } from '../dev/deployment.js'

const root = join(import.meta.dirname, '..', 'manifests')
const load = async (path: string): Promise<any> => parse(await readFile(join(root, path), 'utf8'))

test('the hook Deployment runs two replicas as non-root, without privileges, a writable root or a service-account token, probed on the probe port, with resources set and a grace period longer than its drain', async () => {
  const deployment = await load('server/deployment.yaml')
  const pod = deployment.spec.template.spec
  const [container] = pod.containers
  assert.equal(deployment.spec.replicas, 2)
  assert.equal(pod.automountServiceAccountToken, false)
  assert.equal(pod.securityContext.runAsNonRoot, true)
  assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault')
  assert.deepEqual(container.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'] } })
  assert.equal(container.livenessProbe.httpGet.path, '/healthz')
  assert.equal(container.readinessProbe.httpGet.path, '/readyz')
  // Probes go to the plain-HTTP probe port, which answers without a client certificate when the hook port asks for one.
  const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value]))
  const ports = Object.fromEntries(container.ports.map((p: any) => [p.name, p.containerPort]))
  assert.deepEqual(ports, { http: Number(env.PORT), probes: Number(env.HOOKS_PROBE_PORT) })
  for (const probe of [container.livenessProbe, container.readinessProbe]) assert.equal(probe.httpGet.port, 'probes')
  assert.equal(deployment.spec.template.metadata.annotations['prometheus.io/port'], env.HOOKS_PROBE_PORT)
  for (const kind of ['requests', 'limits']) assert.ok(container.resources[kind].cpu !== undefined && container.resources[kind].memory !== undefined, kind)
  // The command is the image's entrypoint with Node.js's flags between the program and the script.
  const entrypoint = JSON.parse(/^ENTRYPOINT (.*)$/m.exec(await readFile(join(root, '..', 'Dockerfile'), 'utf8'))?.[1] ?? '[]')
  // hookDeployment() refuses a command that is not node, flags, then the script.
  assert.deepEqual(entrypoint, [container.command[0], hookDeployment().script], 'the image runs the same program and script, without flags')
  // The server's own default is this machine only; in a pod, Metacontroller and the kubelet come from outside it.
  assert.equal(env.HOST, '0.0.0.0', 'the Deployment listens on every address, explicitly')
  const imageEnv = [...(await readFile(join(root, '..', 'Dockerfile'), 'utf8')).matchAll(/^ENV (.*)$/gm)].flatMap((line) => (line[1] ?? '').split(/\s+/))
  assert.ok(imageEnv.includes('HOST=0.0.0.0'), `the image listens on every address, explicitly: ENV ${imageEnv.join(' ')}`)
  assert.ok(pod.terminationGracePeriodSeconds > Number(env.HOOKS_SHUTDOWN_TIMEOUT) + container.lifecycle.preStop.sleep.seconds)
  // A draining pod answers /readyz 503 until it stops listening: long enough for the readiness probe to fail as many
  // times as it must, so that its endpoint stops serving while it still serves.
  const readiness = container.readinessProbe
  assert.ok(Number(env.HOOKS_SHUTDOWN_DELAY) >= readiness.periodSeconds * readiness.failureThreshold + readiness.timeoutSeconds,
    `HOOKS_SHUTDOWN_DELAY (${env.HOOKS_SHUTDOWN_DELAY}) is shorter than the readiness probe takes to fail`)
  assert.ok(Number(env.HOOKS_SHUTDOWN_DELAY) < Number(env.HOOKS_SHUTDOWN_TIMEOUT), 'the delay counts within HOOKS_SHUTDOWN_TIMEOUT')
  const service = await load('server/service.yaml')
  assert.equal(service.metadata.name, HOOK_SERVICE.name)
  assert.equal(service.metadata.namespace, HOOK_SERVICE.namespace)
  assert.deepEqual(service.spec.ports.map((p: any) => [p.name, p.targetPort]), [['http', 'http'], ['probes', 'probes']])
  assert.equal(service.spec.ports[0].port, HOOK_SERVICE.port)
})

test('the NetworkPolicy admits only Metacontroller\'s namespace to the hooks and metrics scrapers to the probe port, and lets out only DNS and PostgreSQL', async () => {
  const policy = await load('server/network-policy.yaml')
  assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress'])
  assert.deepEqual(policy.spec.ingress.map((rule: any) => [rule.from.map((from: any) => from.namespaceSelector.matchLabels), rule.ports.map((p: any) => p.port)]), [
    [[{ 'kubernetes.io/metadata.name': 'metacontroller' }], ['http']],
    [[{ 'metacontroller-hooks/metrics-scraper': 'true' }], ['probes']]
  ])
  assert.deepEqual(policy.spec.egress.flatMap((rule: any) => rule.ports.map((p: any) => p.port)), [53, 53, 5432])
})

test('every file of manifests/server and manifests/postgres is in its kustomization, with the namespace; secrets hold example values only', async () => {
  for (const folder of ['server', 'postgres']) {
    const kustomization = await load(`${folder}/kustomization.yaml`)
    const files = (await readdir(join(root, folder))).filter((f) => f !== 'kustomization.yaml').sort()
    // Either can be applied first on a fresh cluster.
    assert.deepEqual([...kustomization.resources].sort(), ['../namespace', ...files], folder)
  }
  assert.deepEqual((await load('namespace/kustomization.yaml')).resources, ['namespace.yaml'])
  assert.equal((await load('namespace/namespace.yaml')).metadata.name, HOOK_SERVICE.namespace)
  assert.match((await load('server/database-secret.yaml')).stringData.DATABASE_URL, /change-me/)
  assert.equal((await load('postgres/secret.yaml')).stringData.POSTGRES_PASSWORD, 'change-me')
})

test('the bearer-token overlay carries no token; Metacontroller sends the Secret\'s token, and the server reads the accepted ones from a mounted file', async () => {
  const overlay = await readdir(join(root, 'overlays', 'bearer-token'))
  for (const file of overlay) assert.doesNotMatch(await readFile(join(root, 'overlays', 'bearer-token', file), 'utf8'), /^kind: Secret$/m, file)
  const [endpoint] = (await load('overlays/bearer-token/endpoint-config.yaml'))[0].value
  assert.equal(endpoint.host, `${HOOK_SERVICE.name}.${HOOK_SERVICE.namespace}`)
  const { name, namespace, key } = endpoint.authorization.secretRef
  assert.deepEqual({ namespace, key }, { namespace: HOOK_SERVICE.namespace, key: 'token' })

  const deployment = await load('overlays/bearer-token/server-token.yaml')
  assert.equal(deployment.metadata.namespace, namespace)
  const pod = deployment.spec.template.spec
  const [volume] = pod.volumes
  assert.deepEqual(volume.secret, { secretName: name, items: [{ key: 'accepted', path: 'tokens' }] })
  const [container] = pod.containers
  const mount = container.volumeMounts.find((m: any) => m.name === volume.name)
  assert.equal(mount.subPath, undefined, 'a subPath mount never sees the Secret change')
  assert.deepEqual(container.env, [{ name: 'HOOKS_BEARER_TOKEN_FILE', value: `${mount.mountPath}/tokens` }])
})

for (const controller of controllers) {
  test(`${controller.name}: its example in manifests/examples is of its kind, and the hook accepts its spec`, async () => {
    const documents = parseAllDocuments(await readFile(join(root, 'examples', `${controller.name}.yaml`), 'utf8'))
    const [sample] = (Array.isArray(documents) ? documents : [documents]).map((d) => d.toJS())
    const { resource } = controller
    assert.equal(sample.apiVersion, resource.apiVersion)
    assert.equal(sample.kind, resource.kind)
    assert.doesNotThrow(() => resource.parseSpec(sample.spec))
  })
}
