import assert from 'node:assert/strict'
import { test } from 'node:test'
import { hookRunner } from '../../../dev/plan/hook-runner.js'
import type { CompositeController } from '../../../hooks/framework/controller.js'
import { HookError } from '../../../hooks/framework/errors.js'
import { podSet } from '../../../hooks/podset/index.js'
import { postgresWriter } from '../../../hooks/postgres-writer/index.js'
import { loadConfig } from '../../../hooks/runtime/config.js'
import { fixture } from '../../helpers/fixtures.js'
import { PLANNED_AT } from '../../helpers/plan.js'

const request = (): any => fixture('podset', 'first-sync')

test('the plan runs a hook through the server\'s app: its answer, its refusal with the status code, its failure with the stack the server logs', async () => {
  const failing: CompositeController<any> = { ...podSet, name: 'failing', hooks: { sync: () => { throw new Error('the hook broke here') } } }
  const refusing: CompositeController<any> = { ...podSet, name: 'refusing', hooks: { sync: () => { throw new HookError(422, 'the parent cannot be served') } } }
  const run = hookRunner({ now: PLANNED_AT, config: loadConfig({ LOG_LEVEL: 'info', HOOKS_BEARER_TOKEN: 'a-token-the-plan-does-not-send' }) })
  const answered = await run(podSet, 'sync', request())
  assert.equal(answered.kind, 'answer')
  assert.deepEqual(await run(refusing, 'sync', request()), { kind: 'refused', statusCode: 422, message: 'the parent cannot be served', rows: [] })
  const failed = await run(failing, 'sync', request())
  assert.equal(failed.kind, 'failed')
  assert.match((failed as { message: string }).message, /^the hook failed \(the server answers 500\): Error: the hook broke here\n\s+at /)
  assert.deepEqual(await run(podSet, 'finalize', request()), { kind: 'refused', statusCode: 404, message: 'this checkout has no finalize hook for podset, which the cluster\'s CompositeController calls', rows: [] })
})

test('a controller that needs PostgreSQL runs only as a stand-in that forecasts its writes', async () => {
  const outcome = await hookRunner({ now: PLANNED_AT })(postgresWriter, 'sync', fixture('postgres-writer', 'sync-create'))
  assert.equal(outcome.kind, 'failed')
  assert.match((outcome as { message: string }).message, /needs PostgreSQL: give the plan the hook server's database settings/)
})

test('the request goes to the hook as the server receives it: over HOOKS_BODY_LIMIT, it is refused 413', async () => {
  const body = request()
  body.parent.metadata.annotations = { padding: 'x'.repeat(2048) }
  const outcome = await hookRunner({ now: PLANNED_AT, config: loadConfig({ HOOKS_BODY_LIMIT: '1Ki' }) })(podSet, 'sync', body)
  assert.equal(outcome.kind, 'refused')
  assert.equal((outcome as { statusCode: number }).statusCode, 413)
})
