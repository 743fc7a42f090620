import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sortedKeys } from '../../../dev/api-server/encoding.js'
import { goJson } from '../../../hooks/framework/wire/apply.js'

test('sortedKeys orders keys as Go does, by UTF-8 bytes: U+FFFF before a character beyond it, which UTF-16 puts first', () => {
  const value = { '\u{1F600}': { b: 1, a: 2 }, '\uFFFF': 0, z: 0 }
  assert.deepEqual(Object.keys(sortedKeys(value)), ['z', '\uFFFF', '\u{1F600}'])
  assert.deepEqual(Object.keys(sortedKeys(value)['\u{1F600}']), ['a', 'b'])
  assert.equal(JSON.stringify(sortedKeys(value)), goJson(value))
})
