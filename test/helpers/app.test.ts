import assert from 'node:assert/strict'
import { test } from 'node:test'
import { controllers } from '../../hooks/controllers.js'
import { build } from './app.js'

test('an app of controllers that need no I/O is built without DATABASE_URL, as npm run check runs their tests', async (t) => {
  const composites = controllers.filter((controller) => controller.needs.length === 0)
  assert.ok(composites.length > 0)
  const url = process.env.DATABASE_URL
  delete process.env.DATABASE_URL
  t.after(() => { process.env.DATABASE_URL = url })
  const { app, pool } = await build(t, { controllers: composites })
  assert.equal(pool, undefined)
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
  await assert.rejects(build(t), /DATABASE_URL is not set/, 'one that needs PostgreSQL still asks for it')
})
