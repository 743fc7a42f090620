import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Controller } from '../hooks/framework/controller.js'
import { controllers } from '../hooks/controllers.js'
import { answersFromRequestAlone } from '../hooks/http/etag.js'
import { groupKey } from '../hooks/framework/wire/objects.js'
import type { CompositeRequest } from '../hooks/framework/wire/schemas.js'
import { planSync } from '../dev/metacontroller-apply.js'
import { afterSync } from '../dev/api-server/metacontroller.js'
import { build } from './helpers/app.js'
import { fixture, fixtureNames, requestFixtures } from './helpers/fixtures.js'
import { assertGolden } from './helpers/golden.js'

/**
 * What every registered controller whose answers depend on the request alone owes its fixtures, whatever it is: its
 * golden answers, and no update loop. A controller added with `npm run new-controller` is held to it with no test of
 * its own.
 */

type Composite = Extract<Controller, { type: 'composite' }>
const offline = controllers.filter((c): c is Composite => c.type === 'composite' && answersFromRequestAlone(c))

for (const controller of offline) {
  test(`${controller.name}: every fixture gets its golden answer`, async (t) => {
    const { app } = await build(t, { databaseUrl: false, controllers: [controller] })
    for (const name of fixtureNames(controller.name)) {
      const response = await app.inject({ method: 'POST', url: `/${controller.name}/sync`, payload: fixture(controller.name, name) })
      assertGolden(response.json(), controller.name, name)
    }
  })

  test(`${controller.name}: from every fixture, applying each answer as Metacontroller does comes to an answer that repeats byte for byte, with nothing left to do`, async (t) => {
    const { app } = await build(t, { databaseUrl: false, controllers: [controller] })
    const sync = async (request: CompositeRequest): Promise<{ statusCode: number, text: string }> => {
      const response = await app.inject({ method: 'POST', url: `/${controller.name}/sync`, payload: request })
      return { statusCode: response.statusCode, text: response.body }
    }
    for (const name of fixtureNames(controller.name)) {
      let request = fixture<CompositeRequest>(controller.name, name)
      let answer = await sync(request)
      if (answer.statusCode !== 200) continue
      // A Pod that failed is left out of one answer and comes back in the next, which counts it only once it is observed.
      for (let syncs = 1; ; syncs++) {
        request = afterSync(request, JSON.parse(answer.text), { time: '2026-11-22T12:00:01Z', resourceVersion: 9000 + syncs * 100 })
        const next = await sync(request)
        if (next.text === answer.text) break
        assert.ok(syncs < 3, `${name}: the answer still changes after ${syncs} syncs`)
        answer = next
      }
      const plan = planSync(controller, request.parent, request.children, JSON.parse(answer.text))
      assert.deepEqual([plan.delete, plan.create, plan.update, plan.recreate, plan.leftAsIs, plan.waitForDeletion, plan.status, plan.errors], [[], [], [], [], [], [], [], []], `${name}: once the answers repeat, Metacontroller has something left to do`)
    }
  })
}

for (const controller of controllers) {
  if (controller.type !== 'composite') continue
  test(`${controller.name}: its fixtures observe a child of every kind it owns, so that the tests (hostile values among them) reach each`, () => {
    const observed = new Set(requestFixtures(controller.name).flatMap((request) => Object.keys(request.children ?? {})))
    for (const child of controller.childResources) {
      assert.ok(observed.has(groupKey(child.kind, child.apiVersion)),
        `no fixture of ${controller.name} observes a ${child.apiVersion} ${child.kind}: add one in which the cluster holds it (npm run new-fixture -- ${controller.name} <case> --after <a case whose answer has it>)`)
    }
  })
}
