import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { parse, stringify } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { answersFromRequestAlone } from '../../hooks/http/etag.js'
import { CommandError } from '../../dev/command.js'
import { render } from '../../dev/render.js'
import { fixture } from '../helpers/fixtures.js'

/**
 * `npm run render` (dev/render.ts) called in-process, as its entry point calls it; two tests run the command itself,
 * for what only the process shows: npm's banner, and its end when the pipe it writes into closes.
 */

const root = join(import.meta.dirname, '..', '..')

/** What `npm run -s render -- <args>` prints, and exits with: its output, or its one-line refusal and its status. */
async function runRender (args: string[], input = ''): Promise<{ status: number, stdout: string, stderr: string }> {
  let stdout = ''
  try {
    await render(args, controllers, { cwd: root, stdin: async () => input, stdout: (text) => { stdout += text } })
    return { status: 0, stdout, stderr: '' }
  } catch (error) {
    if (!(error instanceof CommandError)) throw error
    return { status: error.exitCode, stdout, stderr: `${error.message}\n` }
  }
}

async function file (t: TestContext, name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'render-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const path = join(dir, name)
  await writeFile(path, text)
  return path
}

test('npm run -s render prints the answer as YAML and nothing else, so it can be redirected to a file; without -s npm\'s banner comes first', () => {
  // Without the log level of an enclosing `npm run -s`, which would silence the banner too.
  const { npm_config_loglevel: _level, ...env } = process.env
  const npm = (silent: boolean): ReturnType<typeof spawnSync> => spawnSync('npm', ['run', ...silent ? ['-s'] : [], 'render', '--', 'manifests/examples/podset.yaml'], { cwd: root, env, encoding: 'utf8', timeout: 60_000 })
  const rendered = npm(true)
  assert.equal(rendered.status, 0, String(rendered.stderr))
  const answer = parse(String(rendered.stdout))
  assert.deepEqual(answer.children.map((child: any) => `${child.kind} ${child.metadata.name}`), ['Pod podset-sample-pod-0'])
  assert.equal(answer.status.readyReplicas, 0)
  assert.match(String(npm(false).stdout), /^\s*> metacontroller-hooks@[^\n]* render/)
})

test('render into a pipe that closes first (| head) ends quietly, with exit code 0', async () => {
  const child = spawn('npm', ['run', '-s', 'render', '--', 'manifests/examples/bookstore.yaml'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  // The reading end closes before render writes, as head's does once it has its lines.
  child.stdout.destroy()
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve))
  assert.equal(stderr, '')
  assert.equal(status, 0)
})

test('observed children of the controller\'s kinds are used; objects of any other kind are refused, each named', async (t) => {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'podset-sample-pod-0', labels: { app: 'podset-sample' } },
    spec: { containers: [{ name: 'busybox', image: 'busybox', command: ['sleep', '3600'] }] },
    status: { phase: 'Running' }
  }
  const pods = await file(t, 'pods.yaml', stringify({ apiVersion: 'v1', kind: 'List', items: [pod] }))
  const used = await runRender(['manifests/examples/podset.yaml', '--observed', pods])
  assert.equal(used.status, 0, used.stderr)
  assert.equal(parse(used.stdout).status.readyReplicas, 1)

  const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' } }
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app', namespace: 'shop' } }
  const mixed = await file(t, 'mixed.yaml', [pod, service, deployment].map((object) => stringify(object)).join('---\n'))
  const refused = await runRender(['manifests/examples/podset.yaml', '--observed', mixed])
  assert.equal(refused.status, 1)
  assert.equal(refused.stdout, '')
  assert.equal(refused.stderr.trim(), `--observed ${mixed}: v1 Service default/web and apps/v1 Deployment shop/app are not children of podset, which owns v1 Pod; leave them out`)
})

test('bad arguments get the usage line, or the flags it knows, and exit code 2', async () => {
  for (const args of [[], ['manifests/examples/podset.yaml', '--observed'], ['manifests/examples/podset.yaml', 'other.yaml']]) {
    const result = await runRender(args)
    assert.equal(result.status, 2, args.join(' '))
    assert.match(result.stderr, /usage: npm run -s render -- <custom-resource\.yaml> \[--observed <children\.yaml>\] \[--diff\]\n$/)
  }
  assert.deepEqual(await runRender(['manifests/examples/podset.yaml', '--output', 'x.yaml']), { status: 2, stdout: '', stderr: 'unknown flag --output: it knows --observed <value>, --diff, --help/-h\n' })
})

test('the README\'s example: a BookStore renders its five children', async () => {
  const rendered = await runRender(['manifests/examples/bookstore.yaml'])
  assert.equal(rendered.status, 0, rendered.stderr)
  assert.deepEqual(parse(rendered.stdout).children.map((child: any) => child.kind), ['Service', 'StatefulSet', 'PersistentVolumeClaim', 'Service', 'Deployment'])
})

for (const controller of controllers.filter((c) => c.type === 'composite' && answersFromRequestAlone(c))) {
  test(`${controller.name}: npm run render answers its example`, async () => {
    const rendered = await runRender([`manifests/examples/${controller.name}.yaml`])
    assert.equal(rendered.status, 0, rendered.stderr)
    assert.ok(Array.isArray(parse(rendered.stdout).children))
  })
}

/**
 * A fixture's parent, and its children as `kubectl get <kinds> -l controller-uid=<uid> -o yaml` prints them (a List),
 * in files; `--diff` plans what Metacontroller would do with the hook's answer.
 */
async function planOf (t: TestContext, controller: string, name: string): Promise<Record<string, any>> {
  const request = fixture(controller, name)
  const parent = await file(t, 'parent.yaml', stringify(request.parent))
  const children = await file(t, 'children.yaml', stringify({ apiVersion: 'v1', kind: 'List', items: Object.values(request.children).flatMap((group) => Object.values(group as object)) }))
  const rendered = await runRender([parent, '--observed', children, '--diff'])
  assert.equal(rendered.status, 0, rendered.stderr)
  return parse(rendered.stdout)
}

test('--diff: a steady state has nothing to do, though the API server has filled in every child', async (t) => {
  for (const [controller, name] of [['podset', 'steady-state'], ['bookstore', 'steady-state']]) {
    const plan = await planOf(t, controller as string, name as string)
    assert.deepEqual(Object.keys(plan), ['unchanged', 'status'], `${controller}: ${stringify(plan)}`)
    assert.equal(plan.status, 'unchanged')
  }
})

test('--diff: a PodSet scale-down deletes the highest ordinals; a new image recreates every pod, as its update strategy says', async (t) => {
  const scaleDown = await planOf(t, 'podset', 'scale-down')
  assert.deepEqual(scaleDown.delete, [1, 2, 3, 4].map((i) => `Pod default/sleepers-pod-${i}`))
  assert.deepEqual(scaleDown.unchanged, ['Pod default/sleepers-pod-0'])
  assert.deepEqual(scaleDown.status.readyReplicas, { from: 5, to: 1 })
  const image = await planOf(t, 'podset', 'image-changed')
  assert.deepEqual(image.recreate, [0, 1, 2].map((i) => ({ [`Pod default/sleepers-pod-${i}`]: { strategy: 'Recreate', fields: { 'spec.containers[name=busybox].image': { from: 'busybox:1.36', to: 'busybox:1.37' } } } })))
  assert.deepEqual(Object.keys(image), ['recreate', 'status'])
})

test('--diff: a BookStore dbSize raise updates its claim in place, that field alone', async (t) => {
  const plan = await planOf(t, 'bookstore', 'db-size-raised')
  assert.deepEqual(plan.update, [{ 'PersistentVolumeClaim default/data-example-bookstore-mongodb-0': { strategy: 'InPlace', fields: { 'spec.resources.requests.storage': { from: '2Gi', to: '5Gi' } } } }])
  assert.equal(plan.unchanged.length, 4)
  assert.deepEqual(plan.status['db.volumeSize'], { from: '2Gi', to: '5Gi' })
})

test('--observed - reads the children from standard input; a parent read from a cluster takes only the children its selector selects', async (t) => {
  const request = fixture('podset', 'scale-down')
  const parent = await file(t, 'parent.json', JSON.stringify(request.parent))
  const pods = Object.values(request.children['Pod.v1'] as object)
  const piped = await runRender([parent, '--observed', '-', '--diff'], stringify({ apiVersion: 'v1', kind: 'List', items: pods }))
  assert.equal(piped.status, 0, piped.stderr)
  assert.equal(parse(piped.stdout).delete.length, 4)
  const stranger = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } } }
  const refused = await runRender([parent, '--observed', '-', '--diff'], stringify({ apiVersion: 'v1', kind: 'List', items: [...pods, stranger] }))
  assert.equal(refused.status, 1)
  assert.equal(refused.stderr.trim(), `--observed -: v1 Pod default/web lacks the label controller-uid=${String(request.parent.metadata.uid)} by which Metacontroller selects the children of PodSet default/sleepers; list only those: kubectl get <kinds> -n default -l controller-uid=${String(request.parent.metadata.uid)} -o yaml`)
})

test('--diff: a spec the hook cannot use touches no child; a name it refuses (422) changes nothing at all', async (t) => {
  const invalid = await planOf(t, 'pulsar-consumer', 'sync-invalid-spec-after-steady')
  assert.deepEqual(invalid.unchanged, ['Deployment default/pulsarconsumer-sample-1-deployment'])
  assert.deepEqual(invalid.status['conditions[type=Ready].reason'], { from: 'ConsumersReady', to: 'InvalidSpec' })
  assert.deepEqual(Object.keys(invalid), ['unchanged', 'status'])

  const parent = fixture('podset', 'first-sync').parent
  parent.metadata.name = 'x'.repeat(64)
  const rendered = await runRender([await file(t, 'parent.json', JSON.stringify(parent)), '--diff'])
  assert.equal(rendered.status, 0, rendered.stderr)
  assert.match(parse(rendered.stdout).errors[0], /^the hook answers 422 for PodSet default\/x{64}: PodSet name "x{64}" is 64 characters long, but at most 63 characters fit: .* Metacontroller changes nothing, and shows this in a SyncError event on the parent$/)
})
