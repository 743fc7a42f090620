import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import type pg from 'pg'
import { hookNames } from '../hooks/controller.js'
import { controllers } from '../hooks/controllers.js'
import { build } from './helpers/app.js'
import { fixture, requestFixtures } from './helpers/fixtures.js'

/**
 * Property-based fuzzing of every hook: whatever arrives, the server answers 200, 400, 413 or 422, never 500,
 * and never crashes; every storable value reaches PostgreSQL byte for byte, as a parameter.
 */

const ACCEPTABLE = [200, 400, 413, 422]
const RUNS = 150

const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'binary-ascii', maxLength: 80 }),
  fc.constantFrom("'; DROP TABLE students; --", '"x"', '$1', '%s %n', '\\', '\u0000', '\ud800', '__proto__', 'constructor', 'a'.repeat(63), 'a'.repeat(64), '🐘'.repeat(20)),
  fc.string({ minLength: 10_000, maxLength: 20_000 }).map((s) => s.repeat(10))
)

const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'prototype')), tie('value'), { maxKeys: 4 })
  )
})).value

async function post (app: Awaited<ReturnType<typeof build>>['app'], url: string, payload: string): Promise<number> {
  const response = await app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } })
  assert.ok(ACCEPTABLE.includes(response.statusCode), `${url} answered ${response.statusCode}: ${response.body.slice(0, 300)}`)
  return response.statusCode
}

const hookUrls = controllers.flatMap((c) => hookNames(c).map((hook) => `/${c.name}/${hook}`))

test('random JSON bodies never get a 500', async (t) => {
  const { app } = await build(t, { env: { PG_TABLE_ALLOWLIST: 'students' } })
  await fc.assert(fc.asyncProperty(fc.constantFrom(...hookUrls), fc.jsonValue({ maxDepth: 6 }), async (url, body) => {
    await post(app, url, JSON.stringify(body))
  }), { numRuns: RUNS })
})

test('hook requests with hostile specs, metadata and children never get a 500', async (t) => {
  const { app } = await build(t)
  const requests = new Map(controllers.map((c) => [c.name, requestFixtures(c.name)]))
  await fc.assert(fc.asyncProperty(
    fc.constantFrom(...controllers),
    fc.nat(),
    fc.constantFrom('spec', 'spec-field', 'labels', 'name', 'status'),
    hostileValue,
    async (controller, pick, where, value) => {
      const fixtures = requests.get(controller.name) ?? []
      const request = structuredClone(fixtures[pick % fixtures.length]) as Record<string, any>
      const parent = request.parent ?? request.object
      if (where === 'spec') parent.spec = value
      if (where === 'spec-field') {
        const fields = Object.keys(parent.spec ?? {})
        if (fields.length > 0) parent.spec[fields[0] as string] = value
      }
      if (where === 'labels') parent.metadata.labels = value
      if (where === 'name') parent.metadata.name = value
      if (where === 'status') parent.status = value
      for (const hook of hookNames(controller)) {
        await post(app, `/${controller.name}/${hook}`, JSON.stringify(request))
      }
    }
  ), { numRuns: RUNS })
})

test('deep nesting and prototype keys in a body are answered, not crashed on', async (t) => {
  const { app } = await build(t)
  const text = JSON.stringify(fixture('postgres-writer', 'sync-create'))
  const deep = '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000)
  assert.equal(await post(app, '/postgres-writer/sync', text.replace('"spec":{', `"spec":{"deep":${deep},`)), 200)
  assert.equal(await post(app, '/postgres-writer/sync', text.replace('"metadata":{', '"metadata":{"__proto__":{"polluted":true},')), 400)
  assert.equal(({} as Record<string, unknown>).polluted, undefined)
})

test('every storable hostile string is stored byte for byte, as a parameter', async (t) => {
  const { app, pool, schema } = await build(t)
  const storable = hostileString.filter((s) => !s.includes('\u0000') && s.isWellFormed())
  let index = 0
  await fc.assert(fc.asyncProperty(storable, storable, async (name, country) => {
    const request = fixture('postgres-writer', 'sync-create')
    request.object.metadata.name = `fuzz-${index++}`
    Object.assign(request.object.spec, { name, country })
    const response = await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: request })
    assert.equal(response.json().status.conditions[0].status, 'True', response.body.slice(0, 300))
    const row = await (pool as pg.Pool).query(`SELECT name, country FROM "${schema}".students WHERE id = $1`, [`default/${request.object.metadata.name}`])
    assert.deepEqual(row.rows[0], { name, country })
  }), { numRuns: RUNS })
})

test('NUL bytes and unpaired surrogates give Ready=False InvalidSpec; a 63-character table name works, 64 does not', async (t) => {
  const { app } = await build(t)
  for (const [field, value] of [['name', 'a\u0000b'], ['country', 'x\ud800y']] as const) {
    const request = fixture('postgres-writer', 'sync-create')
    request.object.spec[field] = value
    const { status } = (await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: request })).json()
    assert.equal(status.conditions[0].reason, 'InvalidSpec')
    assert.match(status.conditions[0].message, new RegExp(`spec.${field}`))
  }
  for (const [table, ready] of [['t'.repeat(63), 'True'], ['t'.repeat(64), 'False']] as const) {
    const request = fixture('postgres-writer', 'sync-create')
    request.object.spec.table = table
    const { status } = (await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: request })).json()
    assert.equal(status.conditions[0].status, ready, table.length.toString())
  }
})
