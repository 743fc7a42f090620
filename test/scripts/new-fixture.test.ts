import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { stringify } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { podSet } from '../../hooks/podset/index.js'
import { controllerObject } from '../../dev/api-server/metacontroller.js'
import { CommandError } from '../../dev/command.js'
import { newFixture } from '../../dev/new-fixture.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'

/** `npm run new-fixture` (dev/new-fixture.ts), called in-process as its entry point calls it, writing into a folder of the test's own. */

type Json = Record<string, any>

const repository = join(import.meta.dirname, '..', '..')

/** A folder with what new-fixture reads of the repository: the examples, and PodSet's fixtures. */
async function workspace (t: TestContext): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'new-fixture-'))
  t.after(async () => { await rm(root, { recursive: true, force: true }) })
  await cp(join(repository, 'manifests', 'examples'), join(root, 'manifests', 'examples'), { recursive: true })
  await cp(join(repository, 'test', 'fixtures', 'podset'), join(root, 'test', 'fixtures', 'podset'), { recursive: true })
  return root
}

/** What `npm run -s new-fixture -- <args>` run in `root` prints; its refusal, as a CommandError. */
async function run (root: string, args: string[], input = ''): Promise<string> {
  let printed = ''
  await newFixture(args, controllers, root, { cwd: root, stdin: async () => input, stdout: (text) => { printed += text } })
  return printed
}

const read = (root: string, path: string): Json => JSON.parse(readFileSync(join(root, path), 'utf8'))

test('--after: the cluster once the earlier case\'s answer is applied, the resource\'s new spec as the next generation, and the hook\'s answer', async (t) => {
  const root = await workspace(t)
  await writeFile(join(root, 'five.yaml'), stringify({ apiVersion: 'batch.tutorial.kubebuilder.io/v1', kind: 'PodSet', metadata: { name: 'sleepers' }, spec: { replicas: 5, image: 'busybox:1.36' } }))
  const output = await run(root, ['podset', 'five', '--resource', 'five.yaml', '--after', 'steady-state'])
  assert.equal(output, 'wrote test/fixtures/podset/five.json, and its answer (200) in five.expected.json: read the answer before you commit it\n')
  const request = read(root, 'test/fixtures/podset/five.json')
  const before = fixture('podset', 'steady-state')
  assert.deepEqual(request.parent.spec, { command: ['sleep', '3600'], image: 'busybox:1.36', replicas: 5 })
  assert.equal(request.parent.metadata.generation, before.parent.metadata.generation + 1)
  assert.equal(request.parent.metadata.uid, before.parent.metadata.uid)
  assert.equal(request.parent.status.observedGeneration, before.parent.metadata.generation)
  assert.deepEqual(Object.keys(request.children['Pod.v1']), Object.keys(before.children['Pod.v1']))
  assert.deepEqual(request.controller, controllerObject(podSet))
  // The golden answer is the one the tests get.
  const { app } = await build(t, { databaseUrl: false, controllers: [podSet] })
  const answer = (await app.inject({ method: 'POST', url: '/podset/sync', payload: request })).json()
  assert.deepEqual(read(root, 'test/fixtures/podset/five.expected.json'), answer)
  assert.equal(answer.children.length, 5)
  assert.equal(await run(root, ['podset', 'five', '--resource', 'five.yaml', '--after', 'steady-state']), output.replace(/^wrote/, 'rewrote'))
})

test('--observed: a resource and its children as kubectl get prints them, as they are', async (t) => {
  const root = await workspace(t)
  const captured = fixture('podset', 'scale-down')
  await writeFile(join(root, 'sleepers.yaml'), stringify(captured.parent))
  const list = stringify({ apiVersion: 'v1', kind: 'List', items: Object.values(captured.children['Pod.v1']) })
  await run(root, ['podset', 'captured', '--resource', 'sleepers.yaml', '--observed', '-'], list)
  const request = read(root, 'test/fixtures/podset/captured.json')
  assert.deepEqual(request.parent, captured.parent)
  assert.deepEqual(request.children, captured.children)
  assert.deepEqual(read(root, 'test/fixtures/podset/captured.expected.json'), read(root, 'test/fixtures/podset/scale-down.expected.json'))
})

test('what it cannot write is refused with the reason', async (t) => {
  const root = await workspace(t)
  const refusals: Array<[string[], RegExp]> = [
    [['podset'], /^usage: npm run new-fixture -- <controller> <case>/],
    [['podset', 'x', '--after', 'steady-state', '--observed', 'pods.yaml'], /^give --after or --observed, not both: usage: /],
    [['podset', 'x', '--output', 'x.json'], /^unknown flag --output: it knows --resource <value>, --after <value>, --observed <value>, --help\/-h$/],
    [['no-such', 'x'], /^no controller is named no-such: the registered ones are postgres-writer, bookstore, podset, pulsar-consumer/],
    [['postgres-writer', 'x'], /^postgres-writer is a DecoratorController, so its fixtures cannot be answered offline/],
    [['podset', 'Scale_Down'], /^case "Scale_Down" cannot name a fixture/],
    [['podset', 'x', '--after', 'no-such-case'], /^--after no-such-case: test\/fixtures\/podset\/no-such-case\.json does not exist$/],
    [['podset', 'x', '--resource', 'manifests/examples/bookstore.yaml'], /^manifests\/examples\/bookstore\.yaml holds a blog\.velotio\.com\/v1alpha1 BookStore, and podset serves batch\.tutorial\.kubebuilder\.io\/v1 PodSet$/],
    [['podset', 'x', '--resource', 'missing.yaml'], /^cannot read missing\.yaml: ENOENT$/]
  ]
  for (const [args, message] of refusals) {
    await assert.rejects(run(root, args), (error: Error) => error instanceof CommandError && message.test(error.message), args.join(' '))
  }
})
