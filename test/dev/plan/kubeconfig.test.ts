import assert from 'node:assert/strict'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { stringify } from 'yaml'
import { apiServer, kubeconfigFiles } from '../../../dev/plan/kubeconfig.js'

function folder (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'plan-kubeconfig-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

function config (contexts: Array<[string, string, string]>, clusters: Record<string, object>, users: Record<string, object>, current?: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: Object.entries(clusters).map(([name, cluster]) => ({ name, cluster })),
    users: Object.entries(users).map(([name, user]) => ({ name, user })),
    contexts: contexts.map(([name, cluster, user]) => ({ name, context: { cluster, user } })),
    ...(current === undefined ? {} : { 'current-context': current })
  })
}

test('the files: --kubeconfig, else each of $KUBECONFIG, else ~/.kube/config', () => {
  assert.deepEqual(kubeconfigFiles('/a/config', { KUBECONFIG: '/b:/c' }), ['/a/config'])
  assert.deepEqual(kubeconfigFiles(undefined, { KUBECONFIG: '/b:/c' }), ['/b', '/c'])
  assert.match(kubeconfigFiles(undefined, {})[0] ?? '', /\.kube\/config$/)
})

test('the current context\'s server, CA and token; another context by name; the first file to name an entry wins', async (t) => {
  const dir = folder(t)
  mkdirSync(join(dir, 'pki'))
  writeFileSync(join(dir, 'pki', 'ca.crt'), 'CA')
  writeFileSync(join(dir, 'token'), 'from-a-file\n')
  const first = join(dir, 'first')
  const second = join(dir, 'second')
  writeFileSync(first, config([['prod', 'prod', 'alice']], { prod: { server: 'https://prod:6443/', 'certificate-authority': 'pki/ca.crt' } }, { alice: { token: 'alice-token' } }, 'prod'))
  writeFileSync(second, config([['prod', 'other', 'bob'], ['dev', 'dev', 'bob']], {
    dev: { server: 'https://dev:6443', 'certificate-authority-data': Buffer.from('DEV CA').toString('base64'), 'insecure-skip-tls-verify': true, 'tls-server-name': 'api' }
  }, { bob: { tokenFile: 'token' }, alice: { token: 'shadowed' } }, 'dev'))
  const env = { KUBECONFIG: `${first}:${second}` }

  const prod = await apiServer({}, env)
  assert.deepEqual([prod.server, prod.context, prod.ca?.toString(), prod.authorization], ['https://prod:6443', 'prod', 'CA', 'Bearer alice-token'])
  const dev = await apiServer({ context: 'dev' }, env)
  assert.deepEqual([dev.server, dev.ca?.toString(), dev.insecure, dev.serverName, dev.authorization], ['https://dev:6443', 'DEV CA', true, 'api', 'Bearer from-a-file'])
  await assert.rejects(apiServer({ context: 'staging' }, env), /no context staging in .*; its contexts: prod, dev/)
})

test('a client certificate, a username and password, and an exec plugin\'s token', async (t) => {
  const dir = folder(t)
  const plugin = join(dir, 'credential.sh')
  writeFileSync(plugin, '#!/bin/sh\necho "{\\"apiVersion\\":\\"client.authentication.k8s.io/v1\\",\\"kind\\":\\"ExecCredential\\",\\"status\\":{\\"token\\":\\"$PLAN_TOKEN-$(echo $KUBERNETES_EXEC_INFO | grep -c ExecCredential)\\"}}"\n')
  chmodSync(plugin, 0o755)
  const file = join(dir, 'config')
  writeFileSync(file, config([['cert', 'c', 'cert'], ['basic', 'c', 'basic'], ['exec', 'c', 'exec'], ['broken', 'c', 'broken']], { c: { server: 'https://c' } }, {
    cert: { 'client-certificate-data': Buffer.from('CERT').toString('base64'), 'client-key-data': Buffer.from('KEY').toString('base64') },
    basic: { username: 'u', password: 'p' },
    exec: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: './credential.sh', env: [{ name: 'PLAN_TOKEN', value: 'minted' }] } },
    broken: { exec: { command: 'false' } }
  }))
  const cert = await apiServer({ kubeconfig: file, context: 'cert' })
  assert.deepEqual([cert.cert?.toString(), cert.key?.toString(), cert.authorization], ['CERT', 'KEY', undefined])
  assert.equal((await apiServer({ kubeconfig: file, context: 'basic' })).authorization, `Basic ${Buffer.from('u:p').toString('base64')}`)
  assert.equal((await apiServer({ kubeconfig: file, context: 'exec' })).authorization, 'Bearer minted-1')
  await assert.rejects(apiServer({ kubeconfig: file, context: 'broken' }), /user broken: its exec plugin false failed/)
})

test('what cannot be used is said, with what to do', async (t) => {
  const dir = folder(t)
  await assert.rejects(apiServer({ kubeconfig: join(dir, 'missing') }), /kubeconfig .*missing does not exist: give --kubeconfig the file kubectl uses/)
  await assert.rejects(apiServer({}, { KUBECONFIG: join(dir, 'missing'), HOME: dir }), /no kubeconfig: none of .* exists; give --kubeconfig, or set KUBECONFIG/)
  const file = join(dir, 'config')
  writeFileSync(file, config([['a', 'gone', 'u']], {}, {}))
  await assert.rejects(apiServer({ kubeconfig: file }), /sets no current-context: give --context \(one of a\)/)
  await assert.rejects(apiServer({ kubeconfig: file, context: 'a' }), /context a names cluster gone, which .* does not define/)
  writeFileSync(file, config([['a', 'c', 'u']], { c: { server: 'https://c', 'proxy-url': 'http://proxy' } }, { u: { 'auth-provider': { name: 'gcp' } } }, 'a'))
  await assert.rejects(apiServer({ kubeconfig: file }), /goes through proxy-url http:\/\/proxy, which the plan does not support/)
  writeFileSync(file, config([['a', 'c', 'u']], { c: { server: 'https://c' } }, { u: { 'auth-provider': { name: 'gcp' } } }, 'a'))
  await assert.rejects(apiServer({ kubeconfig: file }), /user u uses an auth-provider \(gcp\).*use its exec plugin instead/)
  writeFileSync(file, 'clusters: [\n')
  await assert.rejects(apiServer({ kubeconfig: file }), /is not valid YAML/)
})
