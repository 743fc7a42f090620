import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import Fastify from 'fastify'
import { controllers } from '../hooks/controllers.js'
import { connectionFromUrl } from '../hooks/database/connection.js'
import { connectPostgres, type PostgresNeed } from '../hooks/database/pool.js'
import { answerBudget, jsonBytes, shownSize } from '../hooks/framework/answer-budget.js'
import { configure, hookContext, ioFor, servedHooks, type Controller } from '../hooks/framework/controller.js'
import type { CompositeResponse, DecoratorResponse, KubernetesObject } from '../hooks/framework/wire/schemas.js'
import { loadConfig } from '../hooks/runtime/config.js'
import { afterSync, syncRequest } from '../dev/api-server/metacontroller.js'
import { worstResource } from '../dev/worst-spec.js'
import { NOW } from '../dev/hook-answer.js'
import { testDatabaseUrl } from './helpers/database-url.js'

/**
 * No custom resource that the CRDs admit asks for an answer larger than the hook sends, computed for every registered
 * controller (a scaffolded one too, with no test edited): the worst spec its schema admits (dev/worst-spec.ts: every
 * string and list at its bound, in the costliest characters; every count at its maximum), under the longest name and
 * namespace, is answered in full, within the answer budget of the default HOOKS_BODY_LIMIT, on its first sync and, for
 * a composite, on the sync after Metacontroller created every child it asked for, whose request (the children as the
 * API server stores them) fits in the default HOOKS_BODY_LIMIT.
 */

const { bodyLimit } = loadConfig({})
const budget = answerBudget(bodyLimit)

/** The parent with the worst spec, its name as long as the resource and Kubernetes allow. */
function worstParent (controller: Controller): KubernetesObject {
  const resource = worstResource(controller.resource)
  return { ...resource, metadata: { ...resource.metadata, namespace: 'a'.repeat(63), uid: '0c3f5b9e-7a51-4b7e-9d0e-6a7c1e2f3d4a', generation: 1 } }
}

/** Fails unless `answer` serves the spec (neither refused nor too large); its size in bytes. */
function servedSize (controller: Controller, answer: CompositeResponse | DecoratorResponse, which: string): number {
  const ready = (answer.status?.conditions as Array<{ type: string, reason: string, message: string }> | undefined)?.find((condition) => condition.type === 'Ready')
  assert.ok(ready !== undefined && !['InvalidSpec', 'AnswerTooLarge'].includes(ready.reason), `${controller.name}, ${which}: the worst spec is not served: ${ready?.reason}: ${ready?.message}`)
  const bytes = jsonBytes(answer, Infinity)
  assert.ok(bytes <= budget, `${controller.name}, ${which}: ${bytes} bytes, over the answer budget of ${budget}`)
  return bytes
}

for (const controller of controllers) {
  test(`${controller.name}: the worst spec its CRD admits is answered within the answer budget (${budget} bytes)`, async (t) => {
    const io: Partial<PostgresNeed> = {}
    const schema = `bounds_${randomBytes(6).toString('hex')}`
    const config = loadConfig({ PG_SCHEMA: schema })
    if ((controller.needs as readonly string[]).includes('postgres')) {
      const postgres = connectPostgres(connectionFromUrl(testDatabaseUrl(), 'test database'), config.database, Fastify().log)
      t.after(async () => {
        await postgres.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await postgres.pool.end()
      })
      io.postgres = postgres
    }
    const served = ioFor(configure(controller, config.settings), io)
    const parent = worstParent(controller)
    const now = NOW.toISOString().replace(/\.\d+Z$/, 'Z')
    if (controller.type === 'decorator') {
      const answer = await servedHooks(controller, bodyLimit).sync({ controller: { metadata: { name: controller.name } }, object: parent, attachments: {}, finalizing: false }, hookContext(controller, parent, now, served))
      t.diagnostic(`${controller.name}: ${shownSize(servedSize(controller, answer, 'first sync'))}`)
      return
    }
    const sync = servedHooks(controller, bodyLimit).sync
    const first = syncRequest(controller, parent)
    const answer = await sync(first, hookContext(controller, first.parent, now, served))
    const firstSize = servedSize(controller, answer, 'first sync')
    const next = afterSync(first, answer, { time: '2026-11-22T12:00:01Z', resourceVersion: 9000 })
    // Every later sync carries the children as the API server stores them: it must fit in the body limit, or each
    // one is refused with 413 and the parent is never synced again.
    const requestSize = jsonBytes(next, Infinity)
    assert.ok(requestSize <= bodyLimit, `${controller.name}: the request once its children exist is ${shownSize(requestSize)}, over HOOKS_BODY_LIMIT (${shownSize(bodyLimit)})`)
    const nextSize = servedSize(controller, await sync(next, hookContext(controller, next.parent, now, served)), 'once its children exist')
    t.diagnostic(`${controller.name}: ${shownSize(firstSize)} on the first sync, ${shownSize(nextSize)} once its children exist, whose request is ${shownSize(requestSize)}`)
  })
}
