import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { runBatch } from '../../hooks/database/pg-internals.js'
import { startWireCounter, type WireCounts } from '../../dev/pg-wire-count.js'
import { testDatabaseUrl } from '../helpers/database-url.js'

test('the wire counter counts the round trips and statements a client makes PostgreSQL answer', async (t) => {
  const counter = await startWireCounter(testDatabaseUrl())
  t.after(async () => { await counter.close() })
  const client = new pg.Client({ connectionString: counter.connectionString })
  await client.connect()
  t.after(async () => { await client.end() })

  const cost = async (work: () => Promise<unknown>): Promise<WireCounts> => {
    const before = counter.counts()
    await work()
    const after = counter.counts()
    return { roundTrips: after.roundTrips - before.roundTrips, statements: after.statements - before.statements }
  }
  assert.deepEqual(await cost(async () => await client.query('SELECT 1')), { roundTrips: 1, statements: 1 }, 'a simple query')
  assert.deepEqual(await cost(async () => await client.query('SELECT $1::int', [1])), { roundTrips: 1, statements: 1 }, 'an extended query')
  assert.deepEqual(await cost(async () => await client.query('SELECT 1; SELECT 2; SELECT 3')), { roundTrips: 1, statements: 3 }, 'three statements in one simple query')
  assert.deepEqual(await cost(async () => await runBatch(client, [{ text: 'SELECT 1' }, { text: 'SELECT 2', name: 'second' }])), { roundTrips: 1, statements: 2 }, 'a batch')
  assert.deepEqual(await cost(async () => { await client.query('BEGIN'); await client.query('SELECT 1'); await client.query('COMMIT') }), { roundTrips: 3, statements: 3 }, 'a transaction of three queries')
})
