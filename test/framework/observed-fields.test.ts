import assert from 'node:assert/strict'
import { test } from 'node:test'
import { hookContext, readFieldsOf, servedHooks, type CompositeController } from '../../hooks/framework/controller.js'
import { withReadFieldsOnly } from '../../hooks/framework/observed-fields.js'
import type { CompositeRequest, CompositeResponse } from '../../hooks/framework/wire/schemas.js'
import { bookStore } from '../../hooks/bookstore/index.js'
import { podSet } from '../../hooks/podset/index.js'
import { postgresWriter } from '../../hooks/postgres-writer/index.js'
import { fixture } from '../helpers/fixtures.js'

test('a controller reads every field of its children unless a child kind declares observedFields', () => {
  assert.deepEqual(readFieldsOf(podSet), new Map([['Pod.v1', new Set(['apiVersion', 'kind', 'metadata', 'status'])]]))
  assert.equal(readFieldsOf(bookStore), undefined)
  assert.equal(readFieldsOf(postgresWriter), undefined, 'a decorator')
})

test('the children of a declared kind keep the fields read alone; the request given and everything else stay as they are', () => {
  const request = fixture<CompositeRequest>('podset', 'steady-state')
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { a: 'b' } }
  request.children['ConfigMap.v1'] = { 'default/settings': configMap }
  request.related = { 'Pod.v1': { 'default/other': { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'other' }, spec: {} } } }
  const before = structuredClone(request)
  const fields = readFieldsOf(podSet)
  assert.ok(fields !== undefined)

  const read = withReadFieldsOnly(request, fields)
  assert.deepEqual(request, before)
  for (const [key, pod] of Object.entries(read.children['Pod.v1'] ?? {})) {
    const observed = before.children['Pod.v1']?.[key]
    assert.deepEqual(Object.keys(pod), ['apiVersion', 'kind', 'metadata', 'status'])
    assert.deepEqual(pod, { apiVersion: observed?.apiVersion, kind: observed?.kind, metadata: observed?.metadata, status: observed?.status })
  }
  assert.equal(read.children['ConfigMap.v1']?.['default/settings'], configMap)
  assert.equal(read.related, request.related)
  assert.equal(read.parent, request.parent)
})

test('a served hook gets the fields its controller reads; the answer that keeps every child reads them all', async () => {
  const request = fixture<CompositeRequest>('podset', 'steady-state')
  const seen: CompositeRequest[] = []
  const watched: CompositeController<typeof podSet.resource> = {
    ...podSet,
    hooks: { sync: (given, context) => { seen.push(given); return podSet.hooks.sync(given, context) } }
  }
  const sync = servedHooks(watched, 16 * 1024 * 1024).sync
  const context = hookContext(watched, request.parent, '2026-11-22T12:00:00Z', {})
  const answer: CompositeResponse = await sync(request, context)
  assert.equal(answer.children.length, 3)
  assert.ok(Object.values(seen[0]?.children['Pod.v1'] ?? {}).every((pod) => !('spec' in pod)))

  // An unusable spec: the children are answered as their last-applied configurations, which the given request lacks.
  const invalid = { ...request, parent: { ...request.parent, spec: { replicas: -1 } } }
  const cut = withReadFieldsOnly(invalid, new Map([['Pod.v1', new Set(['apiVersion', 'kind', 'metadata'])]]))
  await assert.rejects(sync(cut, hookContext(watched, invalid.parent, '2026-11-22T12:00:00Z', {})), /differs from its metacontroller\.k8s\.io\/last-applied-configuration/)
  const kept = await sync(cut, hookContext(watched, invalid.parent, '2026-11-22T12:00:00Z', {}), () => invalid)
  const whole = await sync(invalid, hookContext(watched, invalid.parent, '2026-11-22T12:00:00Z', {}))
  assert.equal(kept.children.length, 3)
  assert.deepEqual(kept, whole)
})
