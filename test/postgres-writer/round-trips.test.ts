import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startWireCounter, type WireCounts } from '../../dev/pg-wire-count.js'
import { build } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { callHook, messageOf, readyOf, request, type HookAnswer } from './calls.js'

/**
 * What each kind of call costs in PostgreSQL, counted from the protocol (dev/pg-wire-count.ts) once the hook's tables
 * exist and the table was found fit: a create is one round trip, the row's lock and one statement; a resync of an
 * unchanged object one read. A first sync that finds the row already there reads it in a second.
 */

test('a create is one round trip of two statements, an unchanged resync one of one; a repeated first sync or a late one after the finalize takes the whole placement', async (t) => {
  const counter = await startWireCounter(testDatabaseUrl())
  t.after(async () => { await counter.close() })
  const app = await build(t, { databaseUrl: counter.connectionString })
  const cost = async (body: Record<string, any>, hook: 'sync' | 'finalize' = 'sync'): Promise<{ answer: HookAnswer, counts: WireCounts }> => {
    const before = counter.counts()
    const answer = await callHook(app, body, hook)
    const after = counter.counts()
    return { answer, counts: { roundTrips: after.roundTrips - before.roundTrips, statements: after.statements - before.statements } }
  }
  const first = await cost(request('sync-create', { objectName: 'first', uid: 'first-uid' }))
  assert.equal(readyOf(first.answer), 'True RowWritten', messageOf(first.answer))

  const created = await cost(request('sync-create'))
  assert.equal(readyOf(created.answer), 'True RowWritten', messageOf(created.answer))
  assert.deepEqual(created.counts, { roundTrips: 1, statements: 2 }, 'the row\'s lock, and the statement that inserts and records the row')

  // The same first sync again, as when its answer never reached Metacontroller: the row is there already.
  const repeated = await cost(request('sync-create'))
  assert.equal(readyOf(repeated.answer), 'True RowWritten', messageOf(repeated.answer))
  assert.deepEqual(repeated.counts, { roundTrips: 2, statements: 4 }, 'the short placement inserts nothing; the whole one finds the row as the spec says')

  const resync = await cost(request('sync-resync'))
  assert.equal(readyOf(resync.answer), 'True RowWritten', messageOf(resync.answer))
  assert.deepEqual(resync.counts, { roundTrips: 1, statements: 1 }, 'one read of the row')

  assert.equal((await callHook(app, request('finalize'), 'finalize')).json.finalized, true)
  const late = await cost(request('sync-create'))
  assert.equal(readyOf(late.answer), 'False RowDeleted', messageOf(late.answer))
  assert.deepEqual(late.counts, { roundTrips: 2, statements: 4 }, 'the short placement stops at the tombstone; the whole one reads it')
})
