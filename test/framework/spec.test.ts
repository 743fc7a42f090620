import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { HookError } from '../../hooks/framework/errors.js'
import { specParser } from '../../hooks/framework/spec.js'

const parse = specParser(Type.Object({
  size: Type.Union([Type.Integer(), Type.String()], { default: '1Gi' }),
  image: Type.Object({ repository: Type.String(), tag: Type.String({ default: 'latest' }) }, { default: {} }),
  command: Type.Array(Type.String(), { default: ['sleep'] })
}), 'Thing')

const DEPTH = 200_000

/** `{"a":{"a":…1…}}`, `depth` levels deep, built without recursion. */
function deep (depth: number): unknown {
  return JSON.parse('{"a":'.repeat(depth) + '1' + '}'.repeat(depth))
}

test('a spec is read as the API server stores it: defaults applied, unknown fields pruned, the request untouched', () => {
  const spec = { image: { repository: 'busybox', extra: true }, unknown: { nested: 1 }, command: ['a', 'b'] }
  const before = structuredClone(spec)
  assert.deepEqual(parse(spec), { size: '1Gi', image: { repository: 'busybox', tag: 'latest' }, command: ['a', 'b'] })
  assert.deepEqual(spec, before)
  assert.notEqual(parse(spec).command, spec.command, 'a copy, so that a hook can never change the request')
})

test('a default that is an object is a copy of its own in each spec, where the schema names no fields to copy', () => {
  const parseLabels = specParser(Type.Object({ labels: Type.Record(Type.String(), Type.String(), { default: { team: 'a' } }) }), 'Thing')
  const first = parseLabels({}) as { labels: Record<string, string> }
  first.labels.team = 'changed'
  assert.deepEqual(parseLabels({}), { labels: { team: 'a' } })
})

test('a value nested 200,000 levels deep is a 422 naming its field, or ignored in a field the schema does not know', () => {
  for (const [spec, field] of [
    [{ image: { repository: 'x' }, size: deep(DEPTH) }, 'spec.size'],
    [{ image: [deep(DEPTH)] }, 'spec.image'],
    [{ image: { repository: deep(DEPTH) } }, 'spec.image.repository'],
    [{ image: { repository: 'x' }, command: ['sleep', deep(DEPTH)] }, 'spec.command.1'],
    [deep(DEPTH), 'spec.image.repository']
  ] as const) {
    assert.throws(() => parse(spec), (error: unknown) => error instanceof HookError && error.statusCode === 422 && error.message.includes(`${field}: Expected`), field)
  }
  assert.deepEqual(parse({ image: { repository: 'x' }, unknown: deep(DEPTH) }), { size: '1Gi', image: { repository: 'x', tag: 'latest' }, command: ['sleep'] })
})
