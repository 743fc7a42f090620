import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { callHook, messageOf, readyOf, request, rows, type HookAnswer } from './calls.js'

/**
 * Metacontroller calls finalize for an object that is not being deleted when it stops matching the DecoratorController's
 * selector, and sync again once it matches. The row goes with the first and comes back with the second; a sync sent
 * before the finalize still writes nothing after it.
 */

const names = async (app: TestApp): Promise<string[]> => (await rows(app, 'students')).map((row) => row.name)

/** The object written, then released: the finalize's answer, whose status Metacontroller writes back. */
async function released (app: TestApp): Promise<HookAnswer> {
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  const finalize = await callHook(app, request('finalize', { notDeleting: true }), 'finalize')
  assert.equal(finalize.json.finalized, true, messageOf(finalize))
  assert.equal(readyOf(finalize), 'False RowDeleted')
  assert.match(messageOf(finalize), /no longer matches the selector of its DecoratorController/)
  assert.equal(typeof finalize.json.status.releaseToken, 'string')
  assert.deepEqual(await names(app), [])
  return finalize
}

test('an object that stops matching the selector loses its row, and gets it back once it matches again', async (t) => {
  const app = await build(t)
  const finalize = await released(app)
  const matched = await callHook(app, request('sync-age-changed', { status: finalize.json.status }))
  assert.equal(readyOf(matched), 'True RowWritten', messageOf(matched))
  assert.equal(matched.json.status.releaseToken, undefined, 'the token goes with the sync that used it')
  assert.deepEqual(await names(app), ['alex'])
  const resync = await callHook(app, request('sync-age-changed', { status: matched.json.status }))
  assert.equal(JSON.stringify(resync.json), JSON.stringify(matched.json), 'the next resync answers the same bytes')
  // Deleted now, it is finalized for good.
  assert.equal((await callHook(app, request('finalize', { status: matched.json.status }), 'finalize')).json.finalized, true)
  assert.deepEqual(await names(app), [])
})

test('a sync sent before the selector\'s finalize writes nothing after it; its answer carries the token, so the sync after it writes', async (t) => {
  const app = await build(t)
  const finalize = await released(app)
  const late = await callHook(app, request('sync-age-changed'))
  assert.equal(readyOf(late), 'False RowDeleted', messageOf(late))
  assert.deepEqual(await names(app), [])
  assert.equal(late.json.status.releaseToken, finalize.json.status.releaseToken)
  assert.equal(late.json.resyncAfterSeconds, 10, 'the next sync, carrying the token, comes soon')
  // Had Metacontroller received that answer (a sync sent once the object matched again, but with a status written
  // before the finalize's), it would have written it back: the next sync writes.
  assert.equal(readyOf(await callHook(app, request('sync-age-changed', { status: late.json.status }))), 'True RowWritten')
  assert.deepEqual(await names(app), ['alex'])
})

test('a finalize repeated while the object still does not match keeps its token', async (t) => {
  const app = await build(t)
  const first = await released(app)
  const again = await callHook(app, request('finalize', { notDeleting: true, status: first.json.status }), 'finalize')
  assert.equal(again.json.finalized, true)
  assert.equal(again.json.status.releaseToken, first.json.status.releaseToken)
})

test('the token of an earlier release does not undo a later one, and no token undoes a deletion', async (t) => {
  const app = await build(t)
  const first = await released(app)
  const matched = await callHook(app, request('sync-create', { status: first.json.status }))
  assert.equal(readyOf(matched), 'True RowWritten')
  const second = await callHook(app, request('finalize', { notDeleting: true, status: matched.json.status }), 'finalize')
  assert.notEqual(second.json.status.releaseToken, first.json.status.releaseToken)
  const stale = await callHook(app, request('sync-create', { status: first.json.status }))
  assert.equal(readyOf(stale), 'False RowDeleted', messageOf(stale))
  assert.deepEqual(await names(app), [])

  // Matched again, then deleted: a sync carrying any token, late as it must be, writes nothing.
  assert.equal(readyOf(await callHook(app, request('sync-create', { status: second.json.status }))), 'True RowWritten')
  const deleted = await callHook(app, request('finalize'), 'finalize')
  assert.equal(deleted.json.finalized, true)
  assert.equal(deleted.json.status.releaseToken, undefined)
  for (const status of [first.json.status, second.json.status, { ...second.json.status, releaseToken: 'made-up' }]) {
    const late = await callHook(app, request('sync-create', { status }))
    assert.equal(readyOf(late), 'False RowDeleted', messageOf(late))
  }
  assert.deepEqual(await names(app), [])
})
