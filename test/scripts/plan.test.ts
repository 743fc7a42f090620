import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, type ServerResponse } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { stringify } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { controllerObject } from '../../dev/api-server/metacontroller.js'
import { podSetCluster } from '../helpers/podset-cluster.js'
import { runIn } from '../helpers/repository-copy.js'

const root = join(import.meta.dirname, '..', '..')

/**
 * `npm run -s plan -- <args>` as docs/plan.md has it (`npm: true`), or the script it runs, which starts sooner; without
 * the tests' database settings. Asynchronous, so that a server of the test can answer it meanwhile.
 */
async function plan (args: string[], { env = {}, npm = false, timeoutMs = 60_000 }: { env?: Record<string, string | undefined>, npm?: boolean, timeoutMs?: number } = {}): Promise<{ status: number | null, stdout: string, stderr: string }> {
  const [command, prefix] = npm ? ['npm', ['run', '-s', 'plan', '--']] : [process.execPath, ['--import', 'tsx', 'scripts/plan.ts']]
  return await runIn(root, command, [...prefix, ...args], { env: { DATABASE_URL: undefined, ...env }, timeoutMs })
}

test('--help says how to call it and what each exit code means', async () => {
  const help = await plan(['--help'], { npm: true })
  assert.equal(help.status, 0)
  assert.match(help.stdout, /^usage: npm run -s plan -- \[--kubeconfig <file>\]/)
  assert.match(help.stdout, /exit codes: 0 nothing would change; 1 something would change; 2 the plan could not be made, or not whole; 3 the new code refuses, fails on or loops on some parents/)
})

test('a mistake in how it is called exits 2 with one line that says what to do, and no stack', async () => {
  const cases = [
    [['--colour'], /^unknown flag --colour: it knows --kubeconfig <value>, .*--help\/-h, --version$/m],
    [['-o', 'yaml'], /^--output yaml: give text or json/],
    [['--controller', 'podset,nope'], new RegExp(`^--controller nope: this checkout has no such controller; it has ${controllers.map((c) => c.name).join(', ')}$`, 'm')],
    [['--kubeconfig', '/nonexistent/config'], /^kubeconfig \/nonexistent\/config does not exist: give --kubeconfig the file kubectl uses$/m]
  ] as const
  const runs = await Promise.all(cases.map(async ([args]) => await plan([...args])))
  cases.forEach(([args, message], i) => {
    const run = runs[i]
    assert.equal(run?.status, 2, `${args.join(' ')}: ${run?.stderr}`)
    assert.match(run?.stderr ?? '', message)
    assert.doesNotMatch(run?.stderr ?? '', /\n\s+at /, 'no stack trace')
  })
  const badDatabase = await plan([], { env: { DATABASE_URL: 'mysql://nope' } })
  assert.equal(badDatabase.status, 2)
  assert.match(badDatabase.stderr, /^the database settings the plan shares with the hook server are not valid: .*DATABASE_URL/)
})

test('an API server that hangs up: exit 2, naming where it looked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plan-cli-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const server = createServer((socket) => { socket.destroy() })
  const port = await new Promise<number>((resolve) => { server.listen(0, '127.0.0.1', () => { resolve((server.address() as { port: number }).port) }) })
  t.after(() => { server.close() })
  const kubeconfig = join(dir, 'config')
  writeFileSync(kubeconfig, stringify({
    clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}` } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x'
  }))
  const run = await plan(['--kubeconfig', kubeconfig, '-o', 'json'])
  assert.equal(run.status, 2, run.stderr)
  const report = JSON.parse(run.stdout)
  assert.equal(report.exitCode, 2)
  assert.match(report.errors[0], new RegExp(`^${controllers[0]?.name ?? ''}: cannot reach the API server at https://127.0.0.1:${port}: ECONNRESET`))
  assert.equal(report.errors.length, controllers.length, 'one error per controller')
})

test('-o json: a plan that cannot start is JSON on stdout too, with its error, as CI reads it', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'plan-home-'))
  t.after(() => { rmSync(home, { recursive: true, force: true }) })
  const run = await plan(['-o', 'json'], { env: { HOME: home, KUBECONFIG: undefined, KUBERNETES_SERVICE_HOST: undefined } })
  assert.equal(run.status, 2, run.stderr)
  const report = JSON.parse(run.stdout)
  assert.equal(report.exitCode, 2)
  assert.deepEqual(report.controllers, [])
  assert.equal(report.errors.length, 1)
  assert.equal(`${report.errors[0]}\n`, run.stderr, 'the same line as on stderr')
  assert.match(report.errors[0], /kubeconfig/)
})

/**
 * An API server, in this process, that serves a controller's object and discovery as a cluster does, and answers the
 * list of its parents with `parents`; the kubeconfig that points the plan at it.
 */
async function misbehavingApiServer (t: import('node:test').TestContext, parents: (response: ServerResponse, page: number) => void): Promise<string> {
  const podset = controllers.find((controller) => controller.name === 'podset')
  assert.ok(podset !== undefined && podset.type === 'composite')
  const json = (response: ServerResponse, body: unknown): void => { response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)) }
  const server = createHttpServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://api')
    if (url.pathname === '/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/podset') return json(response, controllerObject(podset))
    if (url.pathname === `/apis/${podset.resource.apiVersion}`) return json(response, { resources: [{ name: podset.resource.plural, kind: podset.resource.kind, namespaced: true }] })
    if (url.pathname === '/api/v1') return json(response, { resources: [{ name: 'pods', kind: 'Pod', namespaced: true }] })
    if (url.pathname === '/api/v1/pods') return json(response, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] })
    if (url.pathname === `/apis/${podset.resource.apiVersion}/${podset.resource.plural}`) return parents(response, Number(url.searchParams.get('continue') ?? 0))
    response.writeHead(404).end()
  })
  const port = await new Promise<number>((resolve) => { server.listen(0, '127.0.0.1', () => { resolve((server.address() as { port: number }).port) }) })
  t.after(() => { server.close() })
  const dir = mkdtempSync(join(tmpdir(), 'plan-cli-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const kubeconfig = join(dir, 'config')
  writeFileSync(kubeconfig, stringify({
    clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${port}` } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x'
  }))
  return kubeconfig
}

const misbehaviours: Array<[string, (response: ServerResponse, page: number) => void, RegExp]> = [
  ['a continue token that never ends', (response, page) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'PodSetList', apiVersion: 'batch.tutorial.kubebuilder.io/v1', metadata: { continue: String(page + 1) }, items: [] }))
  }, /^podset: GET \/apis\/batch\.tutorial\.kubebuilder\.io\/v1\/podsets still gave a continue token after 2,000 pages of 500: stopped; /],
  ['a list of the wrong shape', (response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 5, items: 'none' }))
  }, /^podset: GET \/apis\/batch\.tutorial\.kubebuilder\.io\/v1\/podsets answered 200 with something other than a list: /],
  ['garbage bytes', (response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.from([0x00, 0xff, 0x7b, 0x22, 0x0a, 0x9c]))
  }, /^podset: GET \/apis\/batch\.tutorial\.kubebuilder\.io\/v1\/podsets answered 200 with a body that is not JSON: /]
]

for (const [what, parents, error] of misbehaviours) {
  test(`an API server that answers the parents' list with ${what}: the plan ends, exit 2, with one line that says so`, { timeout: 120_000 }, async (t) => {
    const kubeconfig = await misbehavingApiServer(t, parents)
    const [text, json] = await Promise.all([
      plan(['--kubeconfig', kubeconfig, '--controller', 'podset']),
      plan(['--kubeconfig', kubeconfig, '--controller', 'podset', '-o', 'json'])
    ])
    assert.equal(json.status, 2, json.stderr)
    const report = JSON.parse(json.stdout)
    assert.equal(report.errors.length, 1, report.errors.join('\n'))
    assert.match(report.errors[0], error)
    assert.doesNotMatch(report.errors[0], /\n/, 'one line')
    assert.equal(text.status, 2, text.stderr)
    assert.equal(text.stderr, '')
    assert.match(text.stdout, new RegExp(`\nerror: ${error.source.slice(1)}.*\n\nexit 2: the plan could not be made, or not whole\n$`))
  })
}

test('a cluster of 2,000 PodSets is planned in a V8 heap of 64 MiB: parents are planned a page at a time, and only totals are kept', { timeout: 300_000 }, async (t) => {
  const count = 2000
  const { url, server } = await podSetCluster(count)
  t.after(() => { server.close() })
  const dir = mkdtempSync(join(tmpdir(), 'plan-cli-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const kubeconfig = join(dir, 'config')
  writeFileSync(kubeconfig, stringify({
    clusters: [{ name: 'c', cluster: { server: url } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x'
  }))
  // The hook server's body limit is 16 MiB by default, which a 64 MiB heap cannot hold: the plan takes its settings.
  const run = await plan(['--kubeconfig', kubeconfig, '--controller', 'podset'], { env: { NODE_OPTIONS: '--max-old-space-size=64', HOOKS_BODY_LIMIT: '1Mi' }, timeoutMs: 280_000 })
  assert.equal(run.status, 0, run.stderr.slice(-2000))
  assert.match(run.stdout, new RegExp(`\npodset +${count} +${4 * count} +${4 * count} +0 +0 +0 +0\n\nexit 0: nothing would change\n$`))
})
