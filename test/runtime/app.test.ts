import assert from 'node:assert/strict'
import { test } from 'node:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { hookNames } from '../../hooks/framework/controller.js'
import { controllers } from '../../hooks/controllers.js'
import { podSet } from '../../hooks/podset/index.js'
import { ErrorResponseSchema } from '../../hooks/framework/wire/schemas.js'
import { build, postText } from '../helpers/app.js'
import { fixture, requestFixtures } from '../helpers/fixtures.js'

const UNREACHABLE = 'postgres://nobody:secret@127.0.0.1:1/none'
const errorResponse = TypeCompiler.Compile(ErrorResponseSchema)

/** `request` about a parent named `name`. */
function withParentName (request: Record<string, any>, name: string): Record<string, any> {
  return { ...request, parent: { ...request.parent, metadata: { ...request.parent.metadata, name } } }
}

test('an app of composites alone needs no database: no pool, ready, and every hook answers', async (t) => {
  const composites = controllers.filter((controller) => controller.type === 'composite')
  // DATABASE_URL is set for the tests, but nothing here needs it.
  const { app, pool } = await build(t, { controllers: composites })
  assert.equal(pool, undefined)
  assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
  for (const controller of composites) {
    const response = await app.inject({ method: 'POST', url: `/${controller.name}/sync`, payload: requestFixtures(controller.name)[0] })
    assert.equal(response.statusCode, 200, `${controller.name}: ${response.body.slice(0, 300)}`)
  }
})

test('an app whose controller needs PostgreSQL does not start without it, and says which', async (t) => {
  await assert.rejects(build(t, { databaseUrl: false }), /^Error: controller postgres-writer needs postgres, but none was configured$/)
})

test('/metrics exposes the hook-duration histogram by controller, hook and outcome', async (t) => {
  const { app } = await build(t)
  await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: fixture('postgres-writer', 'sync-create') })
  await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: fixture('postgres-writer', 'sync-hostile-table') })
  await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: { nope: true } })
  const metrics = await app.inject({ url: '/metrics' })
  assert.equal(metrics.statusCode, 200)
  assert.match(metrics.headers['content-type'] as string, /^text\/plain/)
  for (const outcome of ['ok', 'not_ready', 'rejected']) {
    assert.match(metrics.body, new RegExp(`metacontroller_hooks_duration_seconds_count\\{controller="postgres-writer",hook="sync",outcome="${outcome}"\\} 1`))
  }
})

test('/metrics counts a finalize as finalized or pending, never as not_ready', async (t) => {
  const finalizeOutcomes = async (app: Awaited<ReturnType<typeof build>>['app']): Promise<string[]> => {
    const response = await app.inject({ method: 'POST', url: '/postgres-writer/finalize', payload: fixture('postgres-writer', 'finalize') })
    const metrics = (await app.inject({ url: '/metrics' })).body
    return [String(response.json().finalized), ...metrics.match(/(?<=metacontroller_hooks_duration_seconds_count\{controller="postgres-writer",hook="finalize",outcome=")\w+(?="\} 1)/g) ?? []]
  }
  assert.deepEqual(await finalizeOutcomes((await build(t)).app), ['true', 'finalized'])
  assert.deepEqual(await finalizeOutcomes((await build(t, { databaseUrl: UNREACHABLE, env: { PG_CONNECT_TIMEOUT: '1' } })).app), ['false', 'pending'])
})

const badBodies: Array<[string, string, RegExp]> = [
  ['malformed JSON', '{"object": {', /JSON/],
  ['an empty body', '', /empty/i],
  ['a body that is not a hook request', '{"hello": "world"}', /body\.controller: Expected required property/],
  ['a JSON array', '[1, 2]', /^body: Expected object/],
  ['a missing object', JSON.stringify({ controller: {}, attachments: {} }), /^body\.object: Expected required property/],
  ['an object without metadata', JSON.stringify({ controller: {}, attachments: {}, object: { apiVersion: 'v1', kind: 'X' } }), /body\.object\.metadata: Expected required property/],
  ['finalizing as a string', JSON.stringify({ ...fixture('postgres-writer', 'sync-create'), finalizing: 'yes' }), /finalizing/],
  ['a generation as a string', JSON.stringify({ ...fixture('postgres-writer', 'sync-create'), object: { ...fixture('postgres-writer', 'sync-create').object, metadata: { name: 'x', generation: '1' } } }), /generation/],
  ['attachments of the wrong shape', JSON.stringify({ ...fixture('postgres-writer', 'sync-create'), attachments: { 'Secret.v1': ['x'] } }), /attachments/]
]

for (const [name, payload, message] of badBodies) {
  test(`${name} gets 400 with a message naming what is wrong`, async (t) => {
    const { app } = await build(t)
    const response = await postText(app, '/postgres-writer/sync', payload)
    assert.equal(response.statusCode, 400)
    const body = response.json()
    assert.equal(body.error, 'Bad Request')
    assert.match(body.message, message)
  })
}

test('a 10 MiB request is accepted; one over HOOKS_BODY_LIMIT gets 413 naming the setting', async (t) => {
  const { app } = await build(t)
  const large = fixture('postgres-writer', 'sync-create')
  large.object.metadata.annotations.padding = 'x'.repeat(10 * 1024 * 1024)
  const accepted = await app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: large })
  assert.equal(accepted.statusCode, 200)
  assert.equal(accepted.json().status.conditions[0].status, 'True')

  const limited = await build(t, { env: { HOOKS_BODY_LIMIT: '1Mi' } })
  const refused = await limited.app.inject({ method: 'POST', url: '/postgres-writer/sync', payload: large })
  assert.equal(refused.statusCode, 413)
  assert.match(refused.json().message, /HOOKS_BODY_LIMIT \(1048576 bytes\)/)
})

test('unknown routes get 404 naming every hook path this server serves', async (t) => {
  const { app } = await build(t)
  const hookPaths = controllers.flatMap((controller) => hookNames(controller).map((hook) => `/${controller.name}/${hook}`))
  for (const [method, url] of [['POST', '/nothing/sync'], ['GET', '/'], ['GET', '/podset/finalize']] as const) {
    const response = await app.inject({ method, url, payload: method === 'POST' ? {} : undefined })
    assert.equal(response.statusCode, 404, url)
    const body = response.json()
    assert.deepEqual(Object.keys(body), ['error', 'message'], response.body)
    assert.equal(body.error, 'Not Found')
    assert.match(body.message, new RegExp(`^no ${method} ${url} here`))
    for (const path of hookPaths) assert.ok(body.message.includes(path), `${path} in ${body.message}`)
    assert.match(body.message, /POST .*Content-Type: application\/json.*GET \/healthz, \/readyz and \/metrics/)
  }
})

test('a hook path asked with another method than POST gets 405 with Allow: POST; a probe path, with Allow: GET, HEAD', async (t) => {
  const { app } = await build(t)
  for (const [method, url, allow] of [['GET', '/podset/sync', 'POST'], ['PUT', '/postgres-writer/finalize', 'POST'], ['DELETE', '/bookstore/sync?x=1', 'POST'], ['POST', '/healthz', 'GET, HEAD'], ['PUT', '/metrics', 'GET, HEAD']] as const) {
    const response = await app.inject({ method, url, payload: method === 'GET' ? undefined : {} })
    assert.equal(response.statusCode, 405, `${method} ${url}: ${response.body}`)
    assert.equal(response.headers.allow, allow)
    const path = url.split('?')[0] as string
    assert.deepEqual(response.json(), {
      error: 'Method Not Allowed',
      message: allow === 'POST'
        ? `${path} is a hook: send the Metacontroller hook request with POST and Content-Type: application/json, not ${method}`
        : `${path} answers GET (and HEAD) only, not ${method}`
    })
  }
})

test('a request of the other controller type names the mismatch and the hook that serves it', async (t) => {
  const { app } = await build(t)
  const cases = [
    ['/postgres-writer/sync', fixture('podset', 'first-sync'), 'a CompositeController request (parent, children) of batch.tutorial.kubebuilder.io/v1 PodSet, but /postgres-writer/sync is a DecoratorController hook (object, attachments): send it to /podset/sync'],
    ['/postgres-writer/finalize', fixture('bookstore', 'deletion-in-progress'), 'a CompositeController request (parent, children) of blog.velotio.com/v1alpha1 BookStore, but /postgres-writer/finalize is a DecoratorController hook (object, attachments): send it to /bookstore/sync'],
    ['/podset/sync', fixture('postgres-writer', 'sync-create'), 'a DecoratorController request (object, attachments) of demo.yash.com/v1 PostgresWriter, but /podset/sync is a CompositeController hook (parent, children): send it to /postgres-writer/sync'],
    ['/bookstore/sync', fixture('postgres-writer', 'finalize'), 'a DecoratorController request (object, attachments) of demo.yash.com/v1 PostgresWriter, but /bookstore/sync is a CompositeController hook (parent, children): send it to /postgres-writer/finalize'],
    ['/pulsar-consumer/sync', { controller: {}, object: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }, attachments: {} }, 'a DecoratorController request (object, attachments) of example.com/v1 Widget, but /pulsar-consumer/sync is a CompositeController hook (parent, children): no hook here serves example.com/v1 Widget']
  ] as const
  for (const [url, payload, message] of cases) {
    const response = await app.inject({ method: 'POST', url, payload })
    assert.equal(response.statusCode, 400, `${url}: ${response.body}`)
    assert.deepEqual(response.json(), { error: 'Bad Request', message: `this is ${message}` })
  }
})

test('a body that is not sent as JSON gets 415 saying what to send', async (t) => {
  const { app } = await build(t)
  const body = JSON.stringify(fixture('podset', 'first-sync'))
  for (const contentType of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'application/yaml']) {
    const response = await app.inject({ method: 'POST', url: '/podset/sync', payload: body, headers: contentType === undefined ? {} : { 'content-type': contentType } })
    assert.equal(response.statusCode, 415, `${contentType}: ${response.body}`)
    assert.deepEqual(response.json(), {
      error: 'Unsupported Media Type',
      message: `the body must be a Metacontroller hook request sent as JSON, with the header Content-Type: application/json (this one had ${contentType === undefined ? 'no Content-Type' : `Content-Type: ${contentType}`})`
    })
  }
})

test('every error answer has one shape, {error, message}', async (t) => {
  const { app } = await build(t, { env: { HOOKS_BEARER_TOKEN: 's3cret-token' } })
  const limited = await build(t, { env: { HOOKS_BODY_LIMIT: '1Ki' } })
  const failing = await build(t, { controllers: [{ ...podSet, name: 'broken', hooks: { sync: () => { throw new Error('secret internals') } } }] })
  const authorization = 'Bearer s3cret-token'
  const answers = {
    400: await app.inject({ method: 'POST', url: '/podset/sync', payload: { nope: true }, headers: { authorization } }),
    401: await app.inject({ method: 'POST', url: '/podset/sync', payload: fixture('podset', 'first-sync') }),
    404: await app.inject({ method: 'GET', url: '/nothing', headers: { authorization } }),
    413: await limited.app.inject({ method: 'POST', url: '/podset/sync', payload: { padding: 'x'.repeat(4096) } }),
    415: await app.inject({ method: 'POST', url: '/podset/sync', payload: 'x', headers: { authorization, 'content-type': 'text/plain' } }),
    422: await app.inject({ method: 'POST', url: '/podset/sync', payload: withParentName(fixture('podset', 'first-sync'), 'p'.repeat(64)), headers: { authorization } }),
    500: await failing.app.inject({ method: 'POST', url: '/broken/sync', payload: fixture('podset', 'first-sync') })
  }
  for (const [statusCode, response] of Object.entries(answers)) {
    assert.equal(response.statusCode, Number(statusCode), response.body)
    assert.match(response.headers['content-type'] as string, /^application\/json/)
    const body = response.json()
    assert.ok(errorResponse.Check(body), `${statusCode}: ${response.body}`)
    assert.notEqual(body.message, body.error, `${statusCode}: the message says more than the status`)
  }
})

test('unexpected failures get 500 without details', async (t) => {
  const failing = await build(t, { controllers: [{ ...podSet, name: 'broken', hooks: { sync: () => { throw new Error('secret internals') } } }] })
  const response = await failing.app.inject({ method: 'POST', url: '/broken/sync', payload: fixture('podset', 'first-sync') })
  assert.equal(response.statusCode, 500)
  assert.doesNotMatch(response.body, /secret internals/)
  assert.match(response.json().message, /log/)
})

test('HOOKS_BEARER_TOKEN: hooks need the token; health and metrics stay open', async (t) => {
  const { app } = await build(t, { env: { HOOKS_BEARER_TOKEN: 's3cret-token' } })
  const request = { method: 'POST' as const, url: '/postgres-writer/sync', payload: fixture('postgres-writer', 'sync-create') }
  const missing = await app.inject(request)
  assert.equal(missing.statusCode, 401)
  assert.equal(missing.headers['www-authenticate'], 'Bearer')
  assert.doesNotMatch(missing.body, /s3cret/)
  assert.equal((await app.inject({ ...request, headers: { authorization: 'Bearer wrong' } })).statusCode, 401)
  assert.equal((await app.inject({ ...request, headers: { authorization: 'Bearer s3cret-token' } })).statusCode, 200)
  for (const url of ['/healthz', '/readyz', '/metrics']) assert.equal((await app.inject({ url })).statusCode, 200, url)
})

test('while the server drains, every answer closes its connection: hook answers, refusals and probes alike', async (t) => {
  const { app, lifecycle } = await build(t, { databaseUrl: false, controllers: [podSet] })
  const payload = JSON.stringify(fixture('podset', 'first-sync'))
  const requests = {
    'a hook answer': { method: 'POST', url: '/podset/sync', payload, headers: { 'content-type': 'application/json' } },
    'a refused hook request': { method: 'POST', url: '/podset/sync', payload, headers: { 'content-type': 'text/plain' } },
    'a path no route takes': { method: 'POST', url: '/podsets/sync', payload, headers: { 'content-type': 'application/json' } },
    'a method the path does not take': { method: 'GET', url: '/podset/sync' },
    readiness: { method: 'GET', url: '/readyz' },
    metrics: { method: 'GET', url: '/metrics' }
  } as const
  for (const draining of [false, true]) {
    lifecycle.draining = draining
    for (const [what, request] of Object.entries(requests)) {
      const response = await app.inject(request)
      assert.equal(response.headers.connection, draining ? 'close' : 'keep-alive', `${what}, ${draining ? '' : 'not '}draining: ${response.statusCode}`)
    }
  }
})
