import assert from 'node:assert/strict'
import { test } from 'node:test'
import type pg from 'pg'
import { hookNames, type Controller } from '../../hooks/framework/controller.js'
import { controllers } from '../../hooks/controllers.js'
import { build, postText } from '../helpers/app.js'
import { fixture, forHook, requestFixtures } from '../helpers/fixtures.js'
import { edgeResources, refusedResources, resourceJson } from '../helpers/refused-resources.js'

type Json = Record<string, any>

/** The object a request is about: a composite's parent, a decorator's object. */
const parentOf = (request: Json): Json => request.parent ?? request.object

/** A request to `controller` about `parent`, with nothing observed. */
function requestFor (controller: Controller, parent: Json): Json {
  return controller.type === 'composite'
    ? { controller: {}, parent, children: {} }
    : { controller: {}, object: parent, attachments: {} }
}

/** No table in the app's schema: nothing was written (only an app with PostgresWriter has a pool). */
async function assertNoTable (pool: pg.Pool | undefined, schema: string): Promise<void> {
  const tables = await pool?.query('SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1', [schema])
  assert.equal(tables?.rowCount ?? 0, 0, 'no table was created, so no row was written')
}

for (const controller of controllers) {
  test(`${controller.name}: a parent without a name, or with an empty one, gets 422 from every hook`, async (t) => {
    const { app, pool, schema } = await build(t, { controllers: [controller] })
    const [request] = requestFixtures(controller.name)
    assert.ok(request !== undefined)
    for (const hook of hookNames(controller)) {
      for (const name of [undefined, '']) {
        const body: Json = structuredClone(request)
        if (name === undefined) delete parentOf(body).metadata.name
        else parentOf(body).metadata.name = name
        const response = await app.inject({ method: 'POST', url: `/${controller.name}/${hook}`, payload: forHook(body, hook) })
        const where = `${hook} with name ${JSON.stringify(name)}`
        assert.equal(response.statusCode, 422, where)
        const field = controller.type === 'composite' ? 'parent' : 'object'
        assert.match(response.json().message, new RegExp(`^${field}\\.metadata\\.name is missing or empty: every ${controller.resource.kind} in a cluster has a name`), where)
      }
    }
    await assertNoTable(pool, schema)
  })

  test(`${controller.name}: every hook refuses a parent of another kind, or of another version, with 400 naming both`, async (t) => {
    const { app } = await build(t, { controllers: [controller] })
    const other = controllers[(controllers.indexOf(controller) + 1) % controllers.length] as Controller
    const stranger = parentOf(requestFixtures(other.name)[0] as Json)
    const ownVersion = { ...parentOf(requestFixtures(controller.name)[0] as Json), apiVersion: `${controller.resource.group}/v0` }
    for (const hook of hookNames(controller)) {
      for (const parent of [stranger, ownVersion] as Json[]) {
        const response = await app.inject({ method: 'POST', url: `/${controller.name}/${hook}`, payload: forHook(requestFor(controller, parent), hook) })
        const where = `${parent.apiVersion} ${parent.kind} to ${hook}`
        assert.equal(response.statusCode, 400, where)
        const { message } = response.json()
        assert.ok(message.includes(`is ${parent.apiVersion} ${parent.kind}, but this hook serves ${controller.resource.apiVersion} ${controller.resource.kind}`), `${where}: ${message}`)
      }
    }
  })

  test(`${controller.name}: a name that is no DNS subdomain, or a namespace that is no DNS label, gets 422 naming the field from every hook`, async (t) => {
    const { app, pool, schema } = await build(t, { controllers: [controller] })
    const names = ['b/c', 'Sample', 'a..b', '-a', 'a_b', 'a'.repeat(254)]
    const namespaces = ['a/b', 'Default', 'a.b', 'a'.repeat(64), '']
    const [request] = requestFixtures(controller.name)
    const field = controller.type === 'composite' ? 'parent' : 'object'
    for (const hook of hookNames(controller)) {
      for (const [key, values] of [['name', names], ['namespace', namespaces]] as const) {
        for (const value of values) {
          const body = structuredClone(request) as Json
          parentOf(body).metadata[key] = value
          const response = await app.inject({ method: 'POST', url: `/${controller.name}/${hook}`, payload: forHook(body, hook) })
          const where = `${hook} with ${key} ${JSON.stringify(value.slice(0, 20))}`
          assert.equal(response.statusCode, 422, where)
          assert.match(response.json().message, new RegExp(`^${field}\\.metadata\\.${key} `), where)
        }
      }
    }
    await assertNoTable(pool, schema)
  })
}

test('a BookStore posted to /podset/sync gets 400 naming both kinds and the hook that serves it', async (t) => {
  const { app } = await build(t)
  const response = await app.inject({ method: 'POST', url: '/podset/sync', payload: fixture('bookstore', 'first-sync') })
  assert.equal(response.statusCode, 400)
  assert.deepEqual(response.json(), {
    error: 'Bad Request',
    message: 'parent is blog.velotio.com/v1alpha1 BookStore, but this hook serves batch.tutorial.kubebuilder.io/v1 PodSet: send it to /bookstore/sync'
  })
})

/** A sync request about `resource` (JSON text, so that a literal stays exact), as Metacontroller would send it. */
function syncAbout (controller: Controller, resource: string): string {
  const parent = { metadata: { namespace: 'default', uid: '4f1c0e4e-1d2b-4c39-9c55-2f4b8f0d7a11', generation: 1 } }
  return JSON.stringify(requestFor(controller, parent)).replace(JSON.stringify(parent), resource)
}

const controllerNamed = (name: string): Controller => controllers.find((c) => c.name === name) as Controller

test('every resource the CRDs refuse at kubectl apply, the hook refuses too, saying why: its second line of defence', async (t) => {
  const { app } = await build(t)
  for (const refused of refusedResources) {
    const controller = controllerNamed(refused.controller)
    const where = `${refused.controller}: ${refused.what}`
    const payload = syncAbout(controller, resourceJson(refused, { namespace: 'default', uid: '4f1c0e4e-1d2b-4c39-9c55-2f4b8f0d7a11', generation: 1 }))
    const response = await postText(app, `/${controller.name}/sync`, payload)
    if (refused.hook.refusal === 422) {
      assert.equal(response.statusCode, 422, `${where}: ${response.body.slice(0, 300)}`)
      assert.match(response.json().message, refused.hook.message, where)
    } else {
      const ready = response.json().status.conditions[0]
      assert.deepEqual([response.statusCode, ready.status, ready.reason], [200, 'False', refused.hook.refusal], where)
      assert.match(ready.message, refused.hook.message, where)
    }
  }
})

test('every resource at the edge of what the CRDs accept, the hook accepts too', async (t) => {
  const { app } = await build(t)
  for (const edge of edgeResources) {
    const controller = controllerNamed(edge.controller)
    const resource = { ...edge.resource, metadata: { ...edge.resource.metadata, namespace: 'default', uid: '4f1c0e4e-1d2b-4c39-9c55-2f4b8f0d7a11', generation: 1 } }
    const response = await postText(app, `/${controller.name}/sync`, syncAbout(controller, JSON.stringify(resource)))
    assert.equal(response.statusCode, 200, `${edge.controller}: ${edge.what}: ${response.body.slice(0, 300)}`)
    assert.doesNotMatch(response.json().status.conditions[0].reason, /^Invalid/, `${edge.controller}: ${edge.what}`)
  }
})
