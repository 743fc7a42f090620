import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { admin, callHook, messageOf, readyOf, request, rows, type HookAnswer } from './calls.js'

/**
 * A change of PG_SCHEMA: the hook looks for rows, their placements and tombstones in the new schema alone. Tables
 * moved there keep everything as it was; without that, each row is written anew in the new schema, and the rows of
 * the old one stay.
 */

const FINALIZED_UID = '66666666-6666-4666-8666-666666666666'

/** The object written in the schema of `app`, and another one finalized there: the answer of the first one's sync. */
async function writtenIn (app: TestApp): Promise<HookAnswer> {
  const created = await callHook(app, request('sync-create'))
  assert.equal(readyOf(created), 'True RowWritten')
  assert.equal(readyOf(await callHook(app, request('sync-create', { objectName: 'finalized', uid: FINALIZED_UID }))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize', { objectName: 'finalized', uid: FINALIZED_UID }), 'finalize')).json.finalized, true)
  return created
}

test('the tables moved into the new schema: a resync writes nothing, a late call still writes nothing, a finalize deletes the row', async (t) => {
  const before = await build(t)
  const created = await writtenIn(before)
  const after = await build(t)
  await admin(after, ['students', 'postgres-writer-rows', 'postgres-writer-tombstones']
    .map((table) => `ALTER TABLE "${before.schema}"."${table}" SET SCHEMA "${after.schema}";`).join(' '))

  const resync = await callHook(after, request('sync-resync', { status: created.json.status }))
  assert.equal(readyOf(resync), 'True RowWritten', messageOf(resync))
  assert.match(messageOf(resync), new RegExp(`in ${after.schema}\\.students`))
  assert.equal(resync.json.status.lastDriftRepair, undefined, 'the row was where the hook wrote it')
  const late = await callHook(after, request('sync-create', { objectName: 'finalized', uid: FINALIZED_UID }))
  assert.equal(readyOf(late), 'False RowDeleted', messageOf(late))
  assert.equal((await callHook(after, request('finalize', { status: resync.json.status }), 'finalize')).json.finalized, true)
  assert.deepEqual(await rows(after, 'students'), [])
})

test('the tables left in the old schema: the row is written anew in the new one as missing, and the old row stays', async (t) => {
  const before = await build(t)
  const created = await writtenIn(before)
  const after = await build(t)

  const resync = await callHook(after, request('sync-resync', { status: created.json.status }))
  assert.equal(readyOf(resync), 'True RowWritten', messageOf(resync))
  assert.equal(resync.json.status.lastDriftRepair?.reason, 'RowMissing')
  assert.equal((await callHook(after, request('finalize', { status: resync.json.status }), 'finalize')).json.finalized, true)
  assert.deepEqual(await rows(after, 'students'), [])
  assert.deepEqual((await rows(before, 'students')).map((row) => row.id), ['default/sample-student'], 'the old schema\'s row is left to the operator')
})
