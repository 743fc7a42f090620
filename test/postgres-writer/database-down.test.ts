import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { startPostgres } from '../../dev/postgres-process.js'

test('with PostgreSQL stopped, hooks answer quickly with DatabaseUnavailable, and recover when it is back', async (t) => {
  const postgres = await startPostgres()
  t.after(async () => { await postgres.remove() })
  const { app } = await build(t, { databaseUrl: postgres.connectionString, env: { PG_CONNECT_TIMEOUT: '2', PG_STATEMENT_TIMEOUT: '2' } })
  const call = async (hook: string, name: string): Promise<{ statusCode: number, json: any, ms: number }> => {
    const started = performance.now()
    const response = await app.inject({ method: 'POST', url: `/postgres-writer/${hook}`, payload: fixture('postgres-writer', name) })
    return { statusCode: response.statusCode, json: response.json(), ms: performance.now() - started }
  }

  assert.equal((await call('sync', 'sync-create')).json.status.conditions[0].status, 'True')

  await postgres.stop()
  const sync = await call('sync', 'sync-age-changed')
  assert.equal(sync.statusCode, 200)
  assert.equal(sync.json.status.conditions[0].status, 'False')
  assert.equal(sync.json.status.conditions[0].reason, 'DatabaseUnavailable')
  assert.equal(sync.json.resyncAfterSeconds, 10)
  assert.equal(sync.json.status.table, 'students', 'the row is still where it was')
  assert.ok(sync.ms < 5000, `sync answered in ${Math.round(sync.ms)} ms`)
  const finalize = await call('finalize', 'finalize')
  assert.equal(finalize.statusCode, 200)
  assert.equal(finalize.json.finalized, false)
  assert.equal(finalize.json.status.conditions[0].reason, 'DatabaseUnavailable')
  assert.equal(finalize.json.resyncAfterSeconds, 10)
  assert.ok(finalize.ms < 5000, `finalize answered in ${Math.round(finalize.ms)} ms`)

  await postgres.restart()
  const recovered = await call('sync', 'sync-age-changed')
  assert.equal(recovered.json.status.conditions[0].status, 'True')
  assert.equal((await call('finalize', 'finalize')).json.finalized, true)
})
