import assert from 'node:assert/strict'
import { test } from 'node:test'
import { kubernetesTime } from '../../../hooks/framework/wire/conditions.js'

test('kubernetesTime gives whole seconds, each time of its own second, whatever the order of the calls', () => {
  const times = ['2026-11-22T18:46:34.999Z', '2026-11-22T18:46:34.001Z', '2026-11-22T18:46:35.000Z', '2026-11-22T18:46:34.500Z', '1999-12-31T23:59:59.999Z']
  assert.deepEqual(times.map((time) => kubernetesTime(new Date(time))), [
    '2026-11-22T18:46:34Z', '2026-11-22T18:46:34Z', '2026-11-22T18:46:35Z', '2026-11-22T18:46:34Z', '1999-12-31T23:59:59Z'
  ])
  assert.throws(() => kubernetesTime(new Date(Number.NaN)), RangeError)
})
