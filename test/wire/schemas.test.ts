import assert from 'node:assert/strict'
import { test } from 'node:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { controllers } from '../../hooks/controllers.js'
import { CompositeResponseSchema, DecoratorResponseSchema, ErrorResponseSchema } from '../../hooks/wire/schemas.js'
import { build } from '../helpers/app.js'
import { requestFixtures } from '../helpers/fixtures.js'

const compositeResponse = TypeCompiler.Compile(CompositeResponseSchema)
const decoratorResponse = TypeCompiler.Compile(DecoratorResponseSchema)
const errorResponse = TypeCompiler.Compile(ErrorResponseSchema)

// Metacontroller parses v2 answers strictly: a top-level key it does not know fails the hook.
test('every fixture gets a v2 answer with only the documented top-level keys, or an error body', async (t) => {
  const { app } = await build(t)
  for (const controller of controllers) {
    const check = controller.type === 'composite' ? compositeResponse : decoratorResponse
    for (const request of requestFixtures(controller.name)) {
      const hook = request.finalizing === true ? 'finalize' : 'sync'
      const response = await app.inject({ method: 'POST', url: `/${controller.name}/${hook}`, payload: request })
      const body: unknown = response.json()
      const where = `${controller.name} ${hook} of ${JSON.stringify((request.parent ?? request.object)?.metadata?.name)}`
      if (response.statusCode === 200) {
        assert.ok(check.Check(body), `${where}: ${[...check.Errors(body)].map((e) => `${e.path} ${e.message}`).join('; ')}`)
      } else {
        assert.equal(response.statusCode, 422, where)
        assert.ok(errorResponse.Check(body), `${where}: ${response.body}`)
      }
    }
  }
})
