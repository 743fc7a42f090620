import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { parse, stringify } from 'yaml'

const root = join(import.meta.dirname, '..', '..')

/** `npm run [-s] render -- <args>`, as the README has it. */
function npmRender (args: string[], silent = true): { status: number | null, stdout: string, stderr: string } {
  return spawnSync('npm', ['run', ...silent ? ['-s'] : [], 'render', '--', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 })
}

async function file (t: TestContext, name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'render-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const path = join(dir, name)
  await writeFile(path, text)
  return path
}

test('npm run -s render prints the answer as YAML and nothing else, so it can be redirected to a file', () => {
  const rendered = npmRender(['manifests/examples/podset.yaml'])
  assert.equal(rendered.status, 0, rendered.stderr)
  const answer = parse(rendered.stdout)
  assert.deepEqual(answer.children.map((child: any) => `${child.kind} ${child.metadata.name}`), ['Pod podset-sample-pod-0'])
  assert.equal(answer.status.readyReplicas, 0)
  // Why the README says -s: without it, npm puts its banner first.
  assert.match(npmRender(['manifests/examples/podset.yaml'], false).stdout, /^\s*> metacontroller-hooks@[^\n]* render/)
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
  const used = npmRender(['manifests/examples/podset.yaml', '--observed', pods])
  assert.equal(used.status, 0, used.stderr)
  assert.equal(parse(used.stdout).status.readyReplicas, 1)

  const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' } }
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app', namespace: 'shop' } }
  const mixed = await file(t, 'mixed.yaml', [pod, service, deployment].map((object) => stringify(object)).join('---\n'))
  const refused = npmRender(['manifests/examples/podset.yaml', '--observed', mixed])
  assert.equal(refused.status, 1)
  assert.equal(refused.stdout, '')
  assert.equal(refused.stderr.trim(), `--observed ${mixed}: v1 Service default/web and apps/v1 Deployment shop/app are not children of podset, which owns v1 Pod; leave them out`)
})

test('bad arguments get the usage line', () => {
  for (const args of [[], ['manifests/examples/podset.yaml', '--observed'], ['manifests/examples/podset.yaml', '--output', 'x.yaml']]) {
    const result = npmRender(args)
    assert.equal(result.status, 1, args.join(' '))
    assert.match(result.stderr, /usage: npm run -s render -- <custom-resource\.yaml> \[--observed <children\.yaml>\]/)
  }
})

test('the README\'s example: a BookStore renders its five children', () => {
  const rendered = npmRender(['manifests/examples/bookstore.yaml'])
  assert.equal(rendered.status, 0, rendered.stderr)
  assert.deepEqual(parse(rendered.stdout).children.map((child: any) => child.kind), ['Service', 'StatefulSet', 'PersistentVolumeClaim', 'Service', 'Deployment'])
})
