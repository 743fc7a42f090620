import assert from 'node:assert/strict'
import { request } from 'node:https'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { build } from '../../hooks/runtime/build.js'
import { loadConfig, type Environment } from '../../hooks/runtime/config.js'
import { connectionFromUrl } from '../../hooks/database/connection.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { generateCertificates, type CertificateSet } from '../helpers/certificates.js'
import { fixturePath } from '../helpers/fixtures.js'
import { startServer, waitForReadiness } from '../../dev/server-process.js'

interface Client { cert?: Buffer, key?: Buffer, token?: string }

async function listen (t: import('node:test').TestContext, env: Environment): Promise<number> {
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1', ...env })
  const { app: fastify, postgres } = await build({ config, database: connectionFromUrl(testDatabaseUrl(), 'test database') })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.after(async () => {
    await fastify.close()
    await postgres?.pool.end()
  })
  return (fastify.server.address() as { port: number }).port
}

async function call (port: number, certificates: CertificateSet, client: Client, path = '/postgres-writer/sync'): Promise<number> {
  return await new Promise((resolve, reject) => {
    const body = readFileSync(fixturePath('postgres-writer', 'sync-create'))
    const outgoing = request({
      host: '127.0.0.1',
      port,
      path,
      method: path.endsWith('sync') ? 'POST' : 'GET',
      ca: certificates.read(certificates.caCert),
      cert: client.cert,
      key: client.key,
      headers: { 'content-type': 'application/json', ...(client.token === undefined ? {} : { authorization: `Bearer ${client.token}` }) }
    }, (response) => {
      response.resume()
      response.on('end', () => { resolve(response.statusCode ?? 0) })
    })
    outgoing.on('error', reject)
    outgoing.end(path.endsWith('sync') ? body : undefined)
  })
}

test('HTTPS, mutual TLS and the bearer token together', async (t) => {
  const certificates = generateCertificates()
  t.after(() => { certificates.remove() })
  const port = await listen(t, {
    HOOKS_TLS_CERT: certificates.serverCert,
    HOOKS_TLS_KEY: certificates.serverKey,
    HOOKS_TLS_CLIENT_CA: certificates.caCert,
    HOOKS_BEARER_TOKEN: 'tls-token',
    PG_TABLE_ALLOWLIST: 'students'
  })
  const trusted = { cert: certificates.read(certificates.clientCert), key: certificates.read(certificates.clientKey) }

  assert.equal(await call(port, certificates, { ...trusted, token: 'tls-token' }), 200)
  assert.equal(await call(port, certificates, trusted), 401, 'a trusted certificate does not replace the token')
  await assert.rejects(call(port, certificates, { token: 'tls-token' }), 'a client without a certificate is refused')
  await assert.rejects(
    call(port, certificates, { cert: certificates.read(certificates.strangerCert), key: certificates.read(certificates.strangerKey), token: 'tls-token' }),
    'a certificate from another CA is refused'
  )
  assert.equal(await call(port, certificates, trusted, '/healthz'), 200)
})

test('mutual TLS on, a real server process: the kubelet and a scraper without a certificate get /healthz, /readyz and /metrics on the plain probe port, and nothing else there', async (t) => {
  const certificates = generateCertificates()
  t.after(() => { certificates.remove() })
  // startServer waits for /healthz on the probe port over plain HTTP, as the kubelet's probe does.
  const server = await startServer({
    env: { DATABASE_URL: testDatabaseUrl(), HOOKS_TLS_CERT: certificates.serverCert, HOOKS_TLS_KEY: certificates.serverKey, HOOKS_TLS_CLIENT_CA: certificates.caCert }
  })
  t.after(async () => { await server.stop() })
  const probeUrl = server.probeUrl as string

  // /readyz answers at once; the database's first check may take a moment on a busy machine.
  await waitForReadiness(server, 200, 30_000, 'up')
  const metrics = await fetch(`${probeUrl}/metrics`)
  assert.equal(metrics.status, 200)
  assert.match(await metrics.text(), /^metacontroller_hooks_database_up 1$/m)

  const hook = await fetch(`${probeUrl}/postgres-writer/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  assert.equal(hook.status, 404, 'the probe port serves no hook: mutual TLS cannot be bypassed through it')
  await assert.rejects(call(server.port, certificates, {}, '/healthz'), 'the hook port still refuses a client without a certificate, even for /healthz')
  assert.equal(await call(server.port, certificates, { cert: certificates.read(certificates.clientCert), key: certificates.read(certificates.clientKey) }, '/healthz'), 200)
})

test('HTTPS without a client CA serves any TLS client, and plain HTTP is not answered', async (t) => {
  const certificates = generateCertificates()
  t.after(() => { certificates.remove() })
  const port = await listen(t, { HOOKS_TLS_CERT: certificates.serverCert, HOOKS_TLS_KEY: certificates.serverKey })
  assert.equal(await call(port, certificates, {}), 200)
  const plain = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 'refused')
  assert.notEqual(plain, 200)
})
