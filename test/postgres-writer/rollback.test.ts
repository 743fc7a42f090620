import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { downgradeDdl } from '../../hooks/postgres-writer/statements.js'
import { build } from '../helpers/app.js'
import { admin, callHook, ID, messageOf, readyOf, request, rows } from './calls.js'

/**
 * The way back to a version without placement records (docs/postgres-writer.md, "Rolling back"), and forward again.
 * test/faults/rollback.test.ts runs that version itself, from the repository's history.
 */

const FINALIZED_UID = '44444444-4444-4444-8444-444444444444'

test('the rollback SQL in docs/postgres-writer.md is the one the code defines', () => {
  const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'postgres-writer.md'), 'utf8')
  const section = page.split('## Rolling back to a version without placement records')[1]?.split('\n## ')[0] ?? ''
  const block = /```sql\n([^`]*)```/.exec(section)?.[1]
  assert.ok(block !== undefined, 'the section holds an SQL block')
  const documented = block.split('\n').map((line) => line.trim()).filter((line) => line !== '')
  assert.deepEqual(documented, ['BEGIN;', ...downgradeDdl('public').map((statement) => `${statement};`), 'COMMIT;'])
})

test('after the way back, the earlier version\'s statements work; this version migrates again and adopts every row', async (t) => {
  const app = await build(t)
  assert.equal(readyOf(await callHook(app, request('sync-create'))), 'True RowWritten')
  assert.equal((await callHook(app, request('finalize', { objectName: 'gone', uid: FINALIZED_UID }), 'finalize')).json.finalized, true)
  await admin(app, `BEGIN; ${downgradeDdl(app.schema).map((statement) => `${statement};`).join(' ')} COMMIT;`)

  // What a version without placement records runs: its tombstones by `uid`, rows written wherever, no records.
  await admin(app, `
    SELECT EXISTS (SELECT 1 FROM "postgres-writer-tombstones" WHERE uid = '${FINALIZED_UID}');
    INSERT INTO "postgres-writer-tombstones" (uid, id) VALUES ('earlier-uid', 'default/earlier') ON CONFLICT (uid) DO NOTHING;
    INSERT INTO students VALUES ('default/written-meanwhile', 'kim', 30, 'chile')`)

  const resync = await callHook(app, request('sync-resync'))
  assert.equal(readyOf(resync), 'True RowWritten', messageOf(resync))
  const late = await callHook(app, request('sync-create', { objectName: 'gone', uid: FINALIZED_UID }))
  assert.equal(readyOf(late), 'False RowDeleted', 'a tombstone from before the way back still holds')
  const finalized = await callHook(app, request('finalize', { objectName: 'written-meanwhile', uid: 'written-meanwhile-uid' }), 'finalize')
  assert.equal(finalized.json.finalized, true, messageOf(finalized))
  assert.deepEqual((await rows(app, 'students')).map((row) => row.id), [ID], 'the row written meanwhile was adopted, and deleted by its object\'s finalize')
})
