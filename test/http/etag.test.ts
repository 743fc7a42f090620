import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import pg from 'pg'
import { hookNames } from '../../hooks/framework/controller.js'
import { controllers } from '../../hooks/controllers.js'
import { answersFromRequestAlone, noneMatchHolds, requestTag } from '../../hooks/http/etag.js'
import { bookStore } from '../../hooks/bookstore/index.js'
import { podSet } from '../../hooks/podset/index.js'
import { build, postText } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { fixture, requestFixtures } from '../helpers/fixtures.js'
import { startServer, type ServerProcess } from '../../dev/server-process.js'

/**
 * Webhook ETags (hooks/http/etag.ts), over real HTTP with a client that does what Metacontroller v4's
 * pkg/hooks/webhook_etag.go does, and the claim they rest on: a composite's answer is a function of its request.
 */

type Json = Record<string, any>

interface Call {
  /** The status the server answered. */
  status: number
  /** What the client goes on with: the answer, or the one it kept for a 304 or 412. */
  body: string
  sentIfNoneMatch: string | undefined
  etag: string | null
}

/**
 * Metacontroller's ETag client for one hook (it keeps a cache per hook): per parent (kind, namespace, name) the last 200
 * answer that carried an ETag, sent back as If-None-Match; a 304 or 412 to a request that carried one gives the kept answer (an error when there is none), a
 * 200 with an ETag replaces what is kept, any other status is an error. The key ignores the request's content.
 */
class EtagClient {
  private readonly cache = new Map<string, { etag: string, body: string }>()

  async call (url: string, request: Json): Promise<Call> {
    const root = request.parent ?? request.object
    const key = `${root.kind}/${root.metadata.namespace ?? ''}/${root.metadata.name}`
    const kept = this.cache.get(key)
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (kept !== undefined) headers['if-none-match'] = kept.etag
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(request) })
    const body = await response.text()
    const tag = response.headers.get('etag')
    const call = { status: response.status, sentIfNoneMatch: kept?.etag, etag: tag }
    if (kept !== undefined && (response.status === 304 || response.status === 412)) return { ...call, body: kept.body }
    if (response.status !== 200) throw new Error(`unsupported status code: ${response.status} body: ${body}`)
    if (tag !== null && tag !== '') this.cache.set(key, { etag: tag, body })
    return { ...call, body }
  }

  forget (): void {
    this.cache.clear()
  }
}

async function hookServer (schema: string): Promise<ServerProcess> {
  return await startServer({ env: { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: schema } })
}

test('over HTTP, as Metacontroller: a byte-identical resync gets 304 and the kept answer, a changed one 200, also after a restart', async (t) => {
  const schema = `test_${randomBytes(6).toString('hex')}`
  let server = await hookServer(schema)
  t.after(async () => { await server.stop() })
  const client = new EtagClient()
  const url = (): string => `${server.url}/podset/sync`

  const steady = fixture('podset', 'steady-state')
  const first = await client.call(url(), steady)
  assert.equal(first.status, 200)
  assert.match(first.etag ?? '', /^"[\w-]{16}-[0-9a-f]{16}"$/, 'the hook\'s identity, then the digest of the bytes')

  const resync = await client.call(url(), steady)
  assert.equal(resync.status, 304)
  assert.equal(resync.sentIfNoneMatch, first.etag)
  assert.equal(resync.body, first.body)

  // A changed request after a 304: served in full, and its answer kept from now on. (A new image changes every pod
  // but no condition, so that the answer carries no time of its own to compare.)
  const scaled = structuredClone(steady)
  scaled.parent.spec.image = 'busybox:1.37'
  const changed = await client.call(url(), scaled)
  assert.equal(changed.status, 200)
  assert.equal(changed.sentIfNoneMatch, first.etag)
  assert.notEqual(changed.etag, first.etag)
  assert.deepEqual(new Set(JSON.parse(changed.body).children.map((pod: Json) => pod.spec.containers[0].image)), new Set(['busybox:1.37']))
  const again = await client.call(url(), scaled)
  assert.equal(again.status, 304)
  assert.equal(again.body, changed.body)

  // The same build after a restart gives the same ETags: Metacontroller's cache stays good.
  await server.stop()
  server = await hookServer(schema)
  const afterRestart = await client.call(url(), scaled)
  assert.equal(afterRestart.status, 304)
  assert.equal(afterRestart.body, changed.body)

  // Without If-None-Match, or with one that does not hold, a request is served in full and gets its ETag.
  client.forget()
  const fresh = await client.call(url(), scaled)
  assert.equal(fresh.status, 200)
  assert.equal(fresh.sentIfNoneMatch, undefined)
  assert.equal(fresh.etag, changed.etag)
  assert.equal(fresh.body, changed.body)
  const other = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json', 'if-none-match': first.etag as string }, body: JSON.stringify(scaled) })
  assert.equal(other.status, 200)
  assert.equal(other.headers.get('etag'), changed.etag)
  assert.equal(await other.text(), changed.body)
})

test('over HTTP: every composite\'s hooks carry ETags; PostgresWriter\'s never do, and its resync still repairs the row', async (t) => {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const server = await hookServer(schema)
  const admin = new pg.Client({ connectionString: testDatabaseUrl() })
  await admin.connect()
  t.after(async () => {
    await server.stop()
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })

  for (const controller of controllers.filter(answersFromRequestAlone)) {
    const [request] = requestFixtures(controller.name) as [Json]
    for (const hook of hookNames(controller)) {
      const url = `${server.url}/${controller.name}/${hook}`
      const client = new EtagClient()
      const first = await client.call(url, request)
      assert.equal(first.status, 200, `${url}: ${first.body}`)
      assert.ok(first.etag !== null, url)
      const resync = await client.call(url, request)
      assert.equal(resync.status, 304, url)
      assert.equal(resync.body, first.body, url)
    }
  }

  const url = `${server.url}/postgres-writer/sync`
  const request = fixture('postgres-writer', 'sync-create')
  const first = await new EtagClient().call(url, request)
  assert.equal(first.status, 200)
  assert.equal(first.etag, null)
  const { id } = JSON.parse(first.body).status
  await admin.query(`DELETE FROM "${schema}".students WHERE id = $1`, [id])
  // Even with an If-None-Match (from a Metacontroller whose etag were switched on by hand), the resync runs.
  const resync = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'if-none-match': '"anything"' }, body: JSON.stringify(request) })
  assert.equal(resync.status, 200)
  assert.equal(resync.headers.get('etag'), null)
  assert.deepEqual((await admin.query(`SELECT name FROM "${schema}".students WHERE id = $1`, [id])).rows, [{ name: request.object.spec.name }])
})

test('a 304 is answered from the bytes alone: a body that is not even JSON gets it when its If-None-Match holds', async (t) => {
  const { app, config } = await build(t, { databaseUrl: false, controllers: [podSet, bookStore] })
  const payload = '{"this is": not JSON'
  const tag = requestTag(podSet, 'sync', config.bodyLimit)([Buffer.from(payload)])
  const answer = await postText(app, '/podset/sync', payload, { 'if-none-match': tag })
  assert.equal(answer.statusCode, 304)
  assert.equal(answer.body, '')
  assert.equal(answer.headers.etag, tag)
  assert.equal((await postText(app, '/podset/sync', payload)).statusCode, 400)
  const otherHook = await postText(app, '/bookstore/sync', payload, { 'if-none-match': tag })
  assert.equal(otherHook.statusCode, 400, 'the same bytes to another hook are another request')
  const metrics = await app.inject({ method: 'GET', url: '/metrics' })
  assert.match(metrics.body, /metacontroller_hooks_duration_seconds_count\{controller="podset",hook="sync",outcome="not_modified"\} 1/)
})

test('a request refused under this server\'s HOOKS_BODY_LIMIT gets its refusal, not a 304, whatever ETag it carries', async (t) => {
  const wide = await build(t, { databaseUrl: false, controllers: [podSet] })
  const narrow = await build(t, { databaseUrl: false, controllers: [podSet], env: { HOOKS_BODY_LIMIT: '8Ki' } })
  // Within 8 KiB, with more JSON values than 8Ki allows (512), fewer than the default allows.
  const body = JSON.stringify({ ...fixture('podset', 'first-sync'), extra: new Array(700).fill(0) })
  assert.ok(body.length < 8 * 1024)
  const served = await postText(wide.app, '/podset/sync', body)
  assert.equal(served.statusCode, 200)
  const tag = served.headers.etag as string
  assert.equal((await postText(wide.app, '/podset/sync', body, { 'if-none-match': tag })).statusCode, 304)
  for (const headers of [{}, { 'if-none-match': tag }] as Array<Record<string, string>>) {
    const refused = await postText(narrow.app, '/podset/sync', body, headers)
    assert.equal(refused.statusCode, 413, JSON.stringify(headers))
    assert.match(refused.json().message, /^request body has more than 512 JSON values/)
  }
})

test('a request\'s ETag depends on its bytes alone, not on the chunks they arrive in; one byte more or changed gives another', () => {
  const tagOf = requestTag(podSet, 'sync', 16 * 1024 * 1024)
  const etagOf = (...chunks: Buffer[]): string => tagOf(chunks)
  const body = randomBytes(200_000)
  const whole = etagOf(body)
  assert.match(whole, /^"[\w-]{16}-[0-9a-f]{16}"$/)
  assert.equal(etagOf(body.subarray(0, 1), body.subarray(1, 65_537), body.subarray(65_537)), whole)
  assert.equal(etagOf(...Array.from({ length: 200 }, (_, index) => body.subarray(index * 1000, (index + 1) * 1000))), whole)
  const changed = Buffer.from(body)
  changed[123_456] = (changed[123_456] as number) ^ 1
  assert.notEqual(etagOf(changed), whole)
  assert.notEqual(etagOf(body, Buffer.from(' ')), whole)
  assert.notEqual(requestTag(podSet, 'finalize', 16 * 1024 * 1024)([]), tagOf([]))
})

test('If-None-Match holds the ETag alone, in a list, or weak; not another tag, and not *', () => {
  const tag = '"abc"'
  for (const header of ['"abc"', '"x", "abc"', 'W/"abc"', ' "abc" ,"y"']) assert.equal(noneMatchHolds(header, tag), true, header)
  for (const header of [undefined, '', '"abcd"', 'abc', '*', '"ab"']) assert.equal(noneMatchHolds(header, tag), false, String(header))
})

for (const controller of controllers.filter(answersFromRequestAlone)) {
  test(`${controller.name}: its answer is a function of its request, as its ETag claims: the clock only stamps the transitions it reports`, async (t) => {
    const clocks = [new Date('2030-05-06T07:08:09Z'), new Date('2031-01-02T03:04:05Z')]
    const apps = await Promise.all(clocks.map(async (time) => await build(t, { databaseUrl: false, controllers: [controller], clock: () => time })))
    const stamp = (time: Date): string => time.toISOString().replace(/\.\d{3}Z$/, 'Z')
    let answers = 0
    for (const request of requestFixtures(controller.name)) {
      for (const hook of hookNames(controller)) {
        const url = `/${controller.name}/${hook}`
        const [a, b, again] = await Promise.all([apps[0], apps[1], apps[0]].map(async (built) => await built?.app.inject({ method: 'POST', url, payload: request })))
        assert.equal(again?.body, a?.body, `${url}: the same request twice gives the same answer`)
        assert.equal(a?.body.replaceAll(stamp(clocks[0] as Date), 'NOW'), b?.body.replaceAll(stamp(clocks[1] as Date), 'NOW'), url)
        answers++
      }
    }
    t.diagnostic(`${answers} requests answered alike at two times`)
  })
}
