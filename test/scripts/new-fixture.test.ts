import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { stringify } from 'yaml'
import { podSet } from '../../hooks/podset/index.js'
import { controllerObject } from '../../dev/api-server/metacontroller.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { repositoryCopy, runIn, succeedIn } from '../helpers/repository-copy.js'

type Json = Record<string, any>

const read = (copy: string, path: string): Json => JSON.parse(readFileSync(join(copy, path), 'utf8'))

test('--after: the cluster once the earlier case\'s answer is applied, the resource\'s new spec as the next generation, and the hook\'s answer', async (t) => {
  const copy = await repositoryCopy(t)
  writeFileSync(join(copy, 'five.yaml'), stringify({ apiVersion: 'batch.tutorial.kubebuilder.io/v1', kind: 'PodSet', metadata: { name: 'sleepers' }, spec: { replicas: 5, image: 'busybox:1.36' } }))
  const output = succeedIn(copy, 'npm', ['run', '-s', 'new-fixture', '--', 'podset', 'five', '--resource', 'five.yaml', '--after', 'steady-state'])
  assert.equal(output, 'wrote test/fixtures/podset/five.json, and its answer (200) in five.expected.json: read the answer before you commit it\n')
  const request = read(copy, 'test/fixtures/podset/five.json')
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
  assert.deepEqual(read(copy, 'test/fixtures/podset/five.expected.json'), answer)
  assert.equal(answer.children.length, 5)
})

test('--observed: a resource and its children as kubectl get prints them, as they are', async (t) => {
  const copy = await repositoryCopy(t)
  const captured = fixture('podset', 'scale-down')
  writeFileSync(join(copy, 'sleepers.yaml'), stringify(captured.parent))
  const list = stringify({ apiVersion: 'v1', kind: 'List', items: Object.values(captured.children['Pod.v1']) })
  succeedIn(copy, 'npm', ['run', '-s', 'new-fixture', '--', 'podset', 'captured', '--resource', 'sleepers.yaml', '--observed', '-'], { input: list })
  const request = read(copy, 'test/fixtures/podset/captured.json')
  assert.deepEqual(request.parent, captured.parent)
  assert.deepEqual(request.children, captured.children)
  assert.deepEqual(read(copy, 'test/fixtures/podset/captured.expected.json'), read(copy, 'test/fixtures/podset/scale-down.expected.json'))
})

test('what it cannot write is refused with the reason', async (t) => {
  const copy = await repositoryCopy(t)
  const refusals: Array<[string[], RegExp]> = [
    [['podset'], /^usage: npm run new-fixture -- <controller> <case>/],
    [['podset', 'x', '--after', 'steady-state', '--observed', 'pods.yaml'], /^usage: /],
    [['no-such', 'x'], /^no controller is named no-such: the registered ones are postgres-writer, bookstore, podset, pulsar-consumer/],
    [['postgres-writer', 'x'], /^postgres-writer is a DecoratorController, so its fixtures cannot be answered offline/],
    [['podset', 'Scale_Down'], /^case "Scale_Down" cannot name a fixture/],
    [['podset', 'x', '--after', 'no-such-case'], /^--after no-such-case: test\/fixtures\/podset\/no-such-case\.json does not exist$/],
    [['podset', 'x', '--resource', 'manifests/examples/bookstore.yaml'], /^manifests\/examples\/bookstore\.yaml holds a blog\.velotio\.com\/v1alpha1 BookStore, and podset serves batch\.tutorial\.kubebuilder\.io\/v1 PodSet$/]
  ]
  for (const [args, message] of refusals) {
    const result = runIn(copy, process.execPath, ['--import', 'tsx', 'scripts/new-fixture.ts', ...args])
    assert.equal(result.status, 1, args.join(' '))
    assert.match(result.stderr.trim(), message, args.join(' '))
  }
})
