import assert from 'node:assert/strict'
import { test } from 'node:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type pg from 'pg'
import { hookNames } from '../../../hooks/framework/controller.js'
import { controllers } from '../../../hooks/controllers.js'
import { CompositeResponseSchema, DecoratorResponseSchema, ErrorResponseSchema } from '../../../hooks/framework/wire/schemas.js'
import { build } from '../../helpers/app.js'
import { fixture, requestFixtures } from '../../helpers/fixtures.js'

const compositeResponse = TypeCompiler.Compile(CompositeResponseSchema)
const decoratorResponse = TypeCompiler.Compile(DecoratorResponseSchema)
const errorResponse = TypeCompiler.Compile(ErrorResponseSchema)

// Metacontroller parses v2 answers strictly: a top-level key it does not know fails the hook.
for (const controller of controllers) {
  test(`${controller.name}: every fixture gets a v2 answer with only the documented top-level keys, or an error body`, async (t) => {
    const { app } = await build(t, { controllers: [controller] })
    const check = controller.type === 'composite' ? compositeResponse : decoratorResponse
    for (const request of requestFixtures(controller.name)) {
      const hook = request.finalizing === true ? 'finalize' : 'sync'
      const response = await app.inject({ method: 'POST', url: `/${controller.name}/${hook}`, payload: request })
      const body: unknown = response.json()
      const where = `${hook} of ${JSON.stringify((request.parent ?? request.object)?.metadata?.name)}`
      if (response.statusCode === 200) {
        assert.ok(check.Check(body), `${where}: ${[...check.Errors(body)].map((e) => `${e.path} ${e.message}`).join('; ')}`)
      } else {
        assert.equal(response.statusCode, 422, where)
        assert.ok(errorResponse.Check(body), `${where}: ${response.body}`)
      }
    }
  })
}

// Metacontroller sends `finalizing: true` to a finalize hook only, and `false` to sync, also for a parent being deleted.
test('a request that says it is for the other hook gets 400 naming finalizing, before the controller runs: nothing is written', async (t) => {
  const { app, pool, schema } = await build(t)
  const rows = async (): Promise<unknown[]> => {
    const table = await (pool as pg.Pool).query('SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = $2', [schema, 'students'])
    return table.rowCount === 0 ? [] : (await (pool as pg.Pool).query(`SELECT id, name FROM "${schema}".students`)).rows
  }
  const refused = async (url: string, request: object, message: RegExp): Promise<void> => {
    const response = await app.inject({ method: 'POST', url, payload: request })
    assert.equal(response.statusCode, 400, `${url}: ${response.body}`)
    assert.match(response.json().message, message, url)
  }
  for (const controller of controllers) {
    const [request] = requestFixtures(controller.name) as [Record<string, unknown>]
    await refused(`/${controller.name}/sync`, { ...request, finalizing: true }, /^body\.finalizing: must be false or absent on a sync hook: Metacontroller sends finalizing: true only to a finalize hook, so nothing was done/)
  }
  assert.deepEqual(await rows(), [], 'no table, no row')

  const withFinalize = controllers.filter((controller) => hookNames(controller).includes('finalize'))
  assert.deepEqual(withFinalize.map((controller) => controller.name), ['postgres-writer'])
  const sync = fixture('postgres-writer', 'sync-create')
  assert.equal((await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: sync })).statusCode, 200)
  const written = await rows()
  assert.deepEqual(written, [{ id: 'default/sample-student', name: 'alex' }])
  for (const controller of withFinalize) {
    for (const request of [sync, { ...sync, finalizing: undefined }, { ...fixture('postgres-writer', 'finalize'), finalizing: false }]) {
      await refused(`/${controller.name}/finalize`, request, /^body\.finalizing: must be true on a finalize hook, as Metacontroller sends it, so nothing was done; a request with finalizing false or absent is a sync request: send it to the sync hook/)
    }
  }
  assert.deepEqual(await rows(), written, 'the row is still there')
  // No tombstone either: the object is written again.
  const again = await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: { ...sync, object: { ...sync.object, spec: { ...sync.object.spec, name: 'sam' } } } })
  assert.equal(again.json().status.conditions[0].status, 'True', again.body)
  assert.deepEqual(await rows(), [{ id: 'default/sample-student', name: 'sam' }])
})
