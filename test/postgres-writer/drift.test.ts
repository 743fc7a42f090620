import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, NOW, type TestApp } from '../helpers/app.js'
import { admin, callHook, ID, messageOf, readyOf, request, rows, type HookAnswer } from './calls.js'

/**
 * A sync that finds the row changed or deleted behind the hook's back since it wrote it for the object's generation
 * writes it again, says so in status.lastDriftRepair, and counts it in metacontroller_hooks_drift_repairs_total.
 */

async function repairs (app: TestApp): Promise<Record<string, number>> {
  const body = (await app.app.inject({ url: '/metrics' })).body
  return Object.fromEntries([...body.matchAll(/^metacontroller_hooks_drift_repairs_total\{controller="postgres-writer",drift="(\w+)"\} (\d+)$/gm)]
    .map(([, drift, count]) => [drift, Number(count)]))
}

/** The object written, as Metacontroller then sends it: with the status of that answer. */
async function written (app: TestApp): Promise<HookAnswer> {
  const created = await callHook(app, request('sync-create'))
  assert.equal(readyOf(created), 'True RowWritten')
  return created
}

for (const [what, change, reason, drift] of [
  ['changed', `UPDATE students SET age = 99 WHERE id = '${ID}'`, 'RowChanged', 'changed'],
  ['deleted', `DELETE FROM students WHERE id = '${ID}'`, 'RowMissing', 'missing']
] as const) {
  test(`a row ${what} behind the hook's back: the resync writes it again, says so in the status and counts it`, async (t) => {
    const app = await build(t)
    const { json: { status } } = await written(app)
    await admin(app, change)
    const repaired = await callHook(app, request('sync-resync', { status }))
    assert.equal(readyOf(repaired), 'True RowWritten', messageOf(repaired))
    assert.deepEqual(await rows(app, 'students'), [{ id: ID, name: 'alex', age: 23, country: 'canada' }])
    assert.equal(repaired.json.status.lastDriftRepair.reason, reason)
    assert.equal(repaired.json.status.lastDriftRepair.time, NOW.toISOString().replace('.000', ''))
    assert.match(repaired.json.status.lastDriftRepair.message, new RegExp(`row "${ID}" .*${app.schema}\\.students`))
    assert.deepEqual(await repairs(app), { [drift]: 1 })

    // The next resync finds the row as written: it answers the same bytes, the repair's time included.
    const steady = await callHook(app, request('sync-resync', { status: repaired.json.status }))
    assert.equal(JSON.stringify(steady.json), JSON.stringify(repaired.json))
    assert.deepEqual(await repairs(app), { [drift]: 1 })
  })
}

test('a table dropped behind the hook\'s back: the row is written again into a new one, as missing', async (t) => {
  const app = await build(t)
  const { json: { status } } = await written(app)
  await admin(app, 'DROP TABLE students')
  const repaired = await callHook(app, request('sync-resync', { status }))
  assert.equal(readyOf(repaired), 'True RowWritten', messageOf(repaired))
  assert.equal(repaired.json.status.lastDriftRepair.reason, 'RowMissing')
  assert.equal((await rows(app, 'students')).length, 1)
})

test('what the hook writes for a new spec, a new table or a first sync is no repair', async (t) => {
  const app = await build(t)
  const created = await written(app)
  const aged = await callHook(app, request('sync-age-changed', { status: created.json.status }))
  assert.equal(readyOf(aged), 'True RowWritten')
  const moved = await callHook(app, request('sync-table-moved', { status: aged.json.status }))
  assert.equal(readyOf(moved), 'True RowWritten')
  for (const answer of [created, aged, moved]) assert.equal(answer.json.status.lastDriftRepair, undefined)
  assert.deepEqual(await repairs(app), {})
})

test('a row written while the database refused the last sync is no repair: that sync never said it was written', async (t) => {
  const app = await build(t)
  const created = await written(app)
  await admin(app, `DELETE FROM students WHERE id = '${ID}'`)
  const refused = { ...created.json.status, conditions: [{ ...created.json.status.conditions[0], status: 'False', reason: 'DatabaseUnavailable' }] }
  const rewritten = await callHook(app, request('sync-resync', { status: refused }))
  assert.equal(readyOf(rewritten), 'True RowWritten')
  assert.equal(rewritten.json.status.lastDriftRepair, undefined)
  assert.deepEqual(await repairs(app), {})
})

test('the last repair stays in the status while the object leaves the selector and comes back', async (t) => {
  const app = await build(t)
  const { json: { status } } = await written(app)
  await admin(app, `UPDATE students SET age = 99 WHERE id = '${ID}'`)
  const repaired = await callHook(app, request('sync-resync', { status }))
  const { lastDriftRepair } = repaired.json.status
  assert.equal(lastDriftRepair.reason, 'RowChanged')
  const released = await callHook(app, request('finalize', { notDeleting: true, status: repaired.json.status }), 'finalize')
  assert.equal(released.json.finalized, true, messageOf(released))
  assert.deepEqual(released.json.status.lastDriftRepair, lastDriftRepair)
  const matched = await callHook(app, request('sync-resync', { status: released.json.status }))
  assert.equal(readyOf(matched), 'True RowWritten', messageOf(matched))
  assert.deepEqual(matched.json.status.lastDriftRepair, lastDriftRepair)
})
