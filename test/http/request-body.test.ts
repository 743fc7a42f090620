import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { hookNames, readFieldsOf } from '../../hooks/framework/controller.js'
import { controllers } from '../../hooks/controllers.js'
import { bodyLimits, BYTES_PER_VALUE, MAX_DEPTH, parseBody, scanJson, scannedFirst, textWithout, unreadFields, withoutManagedFields, type BodyLimits } from '../../hooks/http/request-body.js'
import { withReadFieldsOnly } from '../../hooks/framework/observed-fields.js'
import { nestsDeeperThan } from '../../hooks/framework/wire/objects.js'
import { podSet } from '../../hooks/podset/index.js'
import { build, postText } from '../helpers/app.js'
import { fixtureNames, fixture } from '../helpers/fixtures.js'
import { podSetRequest } from '../../dev/api-server/podset-requests.js'

/**
 * The request path of hooks/http/request-body.ts: prototype keys refused after a plain JSON.parse; the value count that
 * bounds a parse; managedFields, and the children's fields no hook reads, left out of it.
 */

/** The JSON values of a parsed value as scanJson counts them: each object and array, and each comma between members. */
function valuesOf (value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  const items = Array.isArray(value) ? value : Object.values(value)
  return 1 + Math.max(0, items.length - 1) + items.reduce((sum: number, item) => sum + valuesOf(item), 0)
}

test('scanJson counts the objects, arrays and commas of a body, not those inside its strings', () => {
  fc.assert(fc.property(fc.jsonValue({ maxDepth: 6 }), fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
    assert.equal(scanJson(Buffer.from(JSON.stringify(value, null, indent))).values, valuesOf(value))
  }), { numRuns: 500 })
  assert.equal(scanJson(Buffer.from(JSON.stringify({ a: '{[,', b: ['\\', '\\"[,{'] }))).values, 4)
  const real = podSetRequest({ replicas: 100 })
  const { values } = scanJson(Buffer.from(JSON.stringify(real)))
  assert.equal(values, valuesOf(real))
  assert.ok(JSON.stringify(real).length / values > BYTES_PER_VALUE, `a real PodSet request has one value per ${(JSON.stringify(real).length / values).toFixed(1)} bytes`)
})

/**
 * What a `__proto__` or `constructor.prototype` key could do if some code copied it with an assignment instead of
 * defining it: lend the object it lands on a prototype with the fields every hook reads.
 */
const POISON = {
  polluted: true,
  replicas: 7,
  image: 'poison',
  command: ['poison'],
  table: 'poison',
  name: 'poison',
  age: 7,
  country: 'poison',
  serverAddress: 'pulsar://poison:6650',
  topic: 'poison',
  subscriptionName: 'poison',
  bookApp: { repository: 'poison', replicas: 7 },
  bookDB: { replicas: 7, dbSize: '7Gi' },
  labels: { poison: 'true' },
  namespace: 'poison',
  generation: 7,
  deletionTimestamp: '2026-11-22T12:00:00Z',
  phase: 'Failed',
  conditions: [{ type: 'Ready', status: 'True', reason: 'Poison', message: 'poison', lastTransitionTime: '2026-11-22T12:00:00Z' }],
  readyReplicas: 7
}

/** The places of a request where a key can sit: every object a hook reads, and the request itself. */
function placesOf (request: Record<string, any>): Array<Record<string, any>> {
  const parent = request.parent ?? request.object
  const groups = Object.values(request.children ?? request.attachments ?? {}) as Array<Record<string, any>>
  const firstChild = groups.flatMap((group) => Object.values(group))[0] as Record<string, any> | undefined
  return [
    request,
    parent,
    parent.metadata,
    parent.metadata.labels,
    parent.metadata.annotations,
    parent.spec,
    parent.status,
    ...(parent.status?.conditions ?? []).slice(0, 1),
    request.children ?? request.attachments,
    ...groups.slice(0, 1),
    ...(firstChild === undefined ? [] : [firstChild, firstChild.metadata, firstChild.spec, firstChild.status])
  ].filter((place): place is Record<string, any> => typeof place === 'object' && place !== null && !Array.isArray(place))
}

for (const controller of controllers) {
  test(`${controller.name}: a __proto__ key, or a constructor key holding a prototype, anywhere in a request gets 400 naming it; another constructor is an ordinary key`, async (t) => {
    const { app } = await build(t, { controllers: [controller] })
    // Each key is compared with a name of the same length, so that the answers can be compared byte for byte.
    const keys = [
      { key: '__proto__', stand: '__proxy__', value: POISON, refused: true },
      // Labels and annotations hold strings: a string-valued `__proto__` passes the envelope's validation.
      { key: '__proto__', stand: '__proxy__', value: 'poison', refused: true },
      { key: '\\u005f_proto__', stand: '__proxy_______', value: POISON, refused: true },
      { key: 'constructor', stand: 'constructer', value: { prototype: POISON }, refused: true },
      { key: 'constructor', stand: 'constructer', value: 'poison', refused: false }
    ]
    let refused = 0
    let compared = 0
    for (const name of fixtureNames(controller.name)) {
      const places = placesOf(fixture(controller.name, name)).length
      for (let place = 0; place < places; place++) {
        for (const { key, stand, value, refused: refuse } of keys) {
          const request = fixture(controller.name, name)
          // Placed first, as a parser meets it before the object's other keys.
          const target = placesOf(request)[place] as Record<string, any>
          const entries = Object.entries(target)
          for (const [k] of entries) Reflect.deleteProperty(target, k)
          Object.assign(target, { [stand]: value }, Object.fromEntries(entries))
          const standIn = JSON.stringify(request)
          const hostile = standIn.replaceAll(`"${stand}"`, `"${key}"`)
          assert.notEqual(hostile, standIn)
          for (const hook of hookNames(controller)) {
            const url = `/${controller.name}/${hook}`
            const post = async (payload: string): Promise<{ statusCode: number, body: string }> =>
              await postText(app, url, payload)
            const where = `${url} ${name}, ${key} at place ${place}`
            if (refuse) {
              const answer = await post(hostile)
              assert.equal(answer.statusCode, 400, `${where}: ${answer.body.slice(0, 300)}`)
              assert.match(JSON.parse(answer.body).message, /^request body has a "(__proto__|constructor)" key.* are refused; remove it$/, where)
              refused++
              continue
            }
            // A PostgresWriter answer depends on what the calls before it left in the database (a sync that repairs a
            // missing row says so; the same sync after it does not): the stand-in goes once first, so that the two
            // answers compared meet the same database.
            await post(standIn)
            const answer = await post(hostile)
            const expected = await post(standIn)
            assert.equal(answer.statusCode, expected.statusCode, `${where}: ${answer.body.slice(0, 300)}`)
            assert.equal(answer.body, expected.body.replaceAll(stand, key), where)
            compared++
          }
        }
      }
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false)
    t.diagnostic(`${refused} requests refused, ${compared} answers compared`)
  })
}

test('a prototype key is refused however deeply it nests, and named by its path', async (t) => {
  const { app } = await build(t)
  const text = JSON.stringify(fixture('podset', 'steady-state'))
  const deep = '{"a":'.repeat(20_000) + '{"__proto__":{"x":1}}' + '}'.repeat(20_000)
  const answer = await postText(app, '/podset/sync', text.replace('"spec":{', `"spec":{"deep":${deep},`))
  assert.equal(answer.statusCode, 400)
  const { message } = JSON.parse(answer.body)
  assert.ok(message.startsWith('request body has a "__proto__" key at controller.spec.deep.a.a.a'), message.slice(0, 100))
  assert.equal(message.match(/(\.a)+: /)?.[0].length, 2 * 20_000 + 2)
})

test('a prototype key inside an observed child\'s field that no hook reads, in a body scanned first, is left out with it', async (t) => {
  // The bound on values is HOOKS_BODY_LIMIT / 16 bytes: this fixture is longer, so it is scanned and what its unread
  // fields hold is left out of the parse, unread, as what managedFields hold is in any body. Nothing reads it; a hook
  // whose answer keeps every child as it is parses the body in full, and is refused then.
  const { app } = await build(t, { env: { HOOKS_BODY_LIMIT: '64Ki' } })
  const text = JSON.stringify(fixture('podset', 'steady-state'))
  assert.ok(text.length > 64 * 1024 / BYTES_PER_VALUE)
  const expected = await postText(app, '/podset/sync', text)
  const hostile = text.replace(/("default\/sleepers-pod-0":\{[^]*?)"spec":\{/, '$1"spec":{"__proto__":{"x":1},')
  assert.notEqual(hostile, text)
  const answer = await postText(app, '/podset/sync', hostile)
  assert.deepEqual([answer.statusCode, answer.body], [expected.statusCode, expected.body])
  const outside = await postText(app, '/podset/sync', hostile.replace('"spec":{"__proto__"', '"__proto__":{"x":1},"spec":{"x"'))
  assert.equal(outside.statusCode, 400, outside.body)
})

test('a body with more JSON values than HOOKS_BODY_LIMIT / 16 gets 413 naming the bound and what to do', async (t) => {
  const { app } = await build(t, { env: { HOOKS_BODY_LIMIT: '1Mi' } })
  const request = fixture('podset', 'first-sync')
  const valid = JSON.stringify({ ...request, padding: Array.from({ length: 1024 * 1024 / BYTES_PER_VALUE / 2 - 200 }, () => []) })
  assert.equal((await postText(app, '/podset/sync', valid)).statusCode, 200)
  const refused = await postText(app, '/podset/sync', JSON.stringify({ ...request, padding: Array.from({ length: 40_000 }, () => []) }))
  assert.equal(refused.statusCode, 413)
  assert.equal(refused.json().error, 'Payload Too Large')
  assert.match(refused.json().message, /more than 65536 JSON values .* HOOKS_BODY_LIMIT \(1048576 bytes\).* raise HOOKS_BODY_LIMIT/)
})

test('scanJson finds a nesting deeper than its limit, not counting the brackets inside strings', () => {
  const deeper = (json: string, limit: number): boolean => scanJson(Buffer.from(json), limit).tooDeep
  assert.equal(deeper('[[{"a":[1]}]]', 3), true)
  assert.equal(deeper('[[{"a":[1]}]]', 4), false)
  assert.equal(deeper(JSON.stringify([{ a: '[[[[' }, { b: '\\' }, [[]]]), 2), true, 'an escaped backslash ends before the closing quote')
  assert.equal(deeper(JSON.stringify([{ a: '\\"[[' }]), 2), false, 'an escaped quote does not close a string')
  assert.equal(deeper('[[[]],[[]],[[]]]', 3), false, 'closed arrays give their depth back')
  // The same answer as the walk of the parsed value.
  fc.assert(fc.property(fc.jsonValue({ maxDepth: 8 }), fc.nat(10), (value, limit) => {
    assert.equal(deeper(JSON.stringify(value), limit), nestsDeeperThan(value, limit))
  }), { numRuns: 500 })
  // Odd and even runs of backslashes before a quote.
  for (const value of [['\\"[[[[[['], ['\\\\"[['], [{ a: '\\\\\\' }, [[[]]]], ['[[[\\', '\\\\\\"[['], [['\\']]]) {
    for (let limit = 0; limit <= 4; limit++) assert.equal(deeper(JSON.stringify(value), limit), nestsDeeperThan(value, limit), JSON.stringify(value))
  }
})

test('strings end at their closing quote wherever it and their escapes fall, also in managedFields', () => {
  // Strings are looked at several bytes at a time: every length and offset up to a few of them, around a quote, a
  // backslash, an escaped backslash and bytes that are neither.
  const inner = ['', '"', '\\', '\\\\', '\\"', '\u00e9', '\u0001', '{[,]}']
  for (let before = 0; before < 9; before++) {
    for (let after = 0; after < 9; after++) {
      for (const middle of inner) {
        const value = { managedFields: ['a'.repeat(before) + middle + 'b'.repeat(after), [{ c: ['[', '\\'] }]], d: [[1, 'x'.repeat(after)]] }
        const bytes = Buffer.from(JSON.stringify(value))
        assert.deepEqual([scanJson(bytes).values, scanJson(bytes, 4).tooDeep, scanJson(bytes, 5).tooDeep], [valuesOf(value), true, false], JSON.stringify(value))
        assert.deepEqual(JSON.parse(withoutManagedFields(bytes)), managedFieldsEmptied(value), JSON.stringify(value))
        assert.deepEqual(JSON.parse(textWithout(bytes, scanJson(bytes).cuts)), managedFieldsEmptied(value), JSON.stringify(value))
      }
    }
  }
})

/** `value` with every array under a managedFields key emptied: what a hook gets of a body. */
function managedFieldsEmptied (value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, item: unknown) => key === 'managedFields' && Array.isArray(item) ? [] : item)
}

/** JSON values whose objects often have a managedFields key, and whose strings and other keys spell or escape it. */
const withManagedFieldsKeys = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.string(), fc.constantFrom('"managedFields":[', '\\', '\\"managedFields":[', ']', '[{')),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('managedFields', 'x"managedFields', 'x\\', 'managedFields\\')), tie('value'), { maxKeys: 4 }),
    fc.record({ managedFields: fc.array(tie('value'), { maxLength: 3 }) }))
})).value

test('withoutManagedFields, and textWithout what scanJson finds, empty every array under a managedFields key, and nothing else, however the text spells or escapes it', () => {
  fc.assert(fc.property(withManagedFieldsKeys, fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
    const bytes = Buffer.from(JSON.stringify(value, null, indent))
    const text = withoutManagedFields(bytes)
    assert.deepEqual(JSON.parse(text), managedFieldsEmptied(value))
    assert.equal(textWithout(bytes, scanJson(bytes).cuts), text)
  }), { numRuns: 1000 })
  // Real requests: every pod's managedFields and the parent's go; the rest is the request as sent.
  const request = podSetRequest({ replicas: 3 })
  const text = withoutManagedFields(Buffer.from(JSON.stringify(request)))
  assert.deepEqual(JSON.parse(text), managedFieldsEmptied(request))
  assert.equal(text.match(/"managedFields":\[\]/g)?.length, 4)
})

/** What parseBody makes of `text`, a value or the message it refuses it with, under `limits`. */
function parsed (text: string, limits: BodyLimits): unknown {
  const bytes = Buffer.from(text)
  try {
    return { value: parseBody({ chunks: [bytes], length: bytes.length }, limits) }
  } catch (error) {
    return { refused: (error as Error).message }
  }
}

test('scanJson leaves out the fields of the children of a group that no hook reads, objects and arrays, and nothing else', () => {
  const unread = unreadFields(new Map([['Pod.v1', new Set(['apiVersion', 'kind', 'metadata', 'status'])]]))
  const pod = (name: string, spec: unknown, volumes: unknown): Record<string, unknown> => ({
    // Out of Go's key order, with look-alikes of a left-out field in what is kept.
    status: { phase: 'Running', spec: { kept: true } },
    spec,
    metadata: { name, managedFields: [{ manager: 'x' }], annotations: { note: '"spec":{"x":1}', 'spec"': '{' } },
    kind: 'Pod',
    apiVersion: 'v1',
    volumes,
    priority: 3,
    note: 'spec'
  })
  const request = (spec: unknown, volumes: unknown, configMapData: unknown): unknown => ({
    controller: { spec: { generateSelector: true } },
    parent: { metadata: { name: 'p', managedFields: [{ manager: 'y' }] }, spec: { replicas: 2 } },
    children: {
      'ConfigMap.v1': { 'default/c': { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: configMapData } },
      'Pod.v1': { 'default/a': pod('a', spec, volumes), 'default/b': { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'b' } } }
    },
    related: { 'Pod.v1': { 'default/r': { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'r' }, spec: { r: 1 } } } },
    finalizing: false
  })
  const sent = request({ containers: [{ name: 'c', args: ['}', ']', '\\"'] }] }, [{ name: 'v' }], { spec: '{"a":1}' })
  const expected = managedFieldsEmptied(request({}, [], { spec: '{"a":1}' }))
  for (const indent of [undefined, 1, '\t']) {
    const bytes = Buffer.from(JSON.stringify(sent, null, indent))
    assert.deepEqual(JSON.parse(textWithout(bytes, scanJson(bytes, MAX_DEPTH, unread).cuts)), expected, `indent ${String(indent)}`)
  }
})

test('what a hook reads of a body is the same whether the body was scanned first, its unread fields left out, or not', () => {
  const fields = readFieldsOf(podSet)
  assert.ok(fields !== undefined)
  const bytes = Buffer.from(JSON.stringify(podSetRequest({ replicas: 10 })))
  const body = { chunks: [bytes], length: bytes.length }
  const [large, small] = [bodyLimits(64 * 1024), bodyLimits(16 * 1024 * 1024)]
  assert.deepEqual([scannedFirst(body, large), scannedFirst(body, small)], [true, false])
  const scanned = parseBody(body, large, unreadFields(fields)) as { children: Record<string, Record<string, { spec: unknown }>> }
  const whole = parseBody(body, small, unreadFields(fields))
  assert.ok(Object.values(scanned.children['Pod.v1'] ?? {}).every((child) => JSON.stringify(child.spec) === '{}'))
  assert.deepEqual(withReadFieldsOnly(scanned, fields), withReadFieldsOnly(whole, fields))
})

test('a body above the bound on values, scanned before it is parsed, gets what a smaller one gets: the same value or the same refusal', () => {
  // Keys that JSON.stringify cannot write from a generated object: put in afterwards.
  const keys = fc.constantFrom('PROTO', 'CONSTRUCTOR', 'managedFields', 'prototype', 'a')
  const body = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true },
      fc.oneof(fc.integer(), fc.string(), fc.constantFrom('__proto__', 'constructor', '\\u0041', '"managedFields":[', ']')),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(keys, tie('value'), { maxKeys: 4 }))
  })).value
  const breakages = fc.constantFrom('', '}', ']', '"', ',', '[', '\\u005f_proto__')
  fc.assert(fc.property(body, breakages, fc.nat(), (value, breakage, at) => {
    const whole = JSON.stringify(value).replaceAll('"PROTO"', '"__proto__"').replaceAll('"CONSTRUCTOR"', '"constructor"')
    const cut = at % (whole.length + 1)
    const text = `${whole.slice(0, cut)}${breakage}${whole.slice(cut)}`
    const small = parsed(text, { bytes: 1 << 20, values: 1 << 20 })
    assert.deepEqual(parsed(text, { bytes: 1 << 20, values: text.length - 1 }), small)
  }), { numRuns: 2000 })
})

test('a body that is not JSON gets 400 with what JSON.parse says of the body as sent, also when its managedFields are left out', async (t) => {
  const { app } = await build(t)
  const request = JSON.stringify(podSetRequest({ replicas: 2 }))
  for (const payload of [
    `${request.slice(0, -1)},"broken":}`,
    request.replace('"managedFields":[', '"managedFields":[}'),
    request.replace('"managedFields":[', '"managedFields":["unterminated'),
    `${request.slice(0, 2000)}`
  ]) {
    let expected = ''
    try { JSON.parse(payload) } catch (error) { expected = (error as Error).message }
    assert.notEqual(expected, '')
    const answer = await postText(app, '/podset/sync', payload)
    assert.equal(answer.statusCode, 400)
    assert.equal(answer.json().message, `request body is not valid JSON (${expected}): send a Metacontroller v2 hook request`)
  }
})

/** `bytes` cut at each offset (taken modulo its length), in order: the chunks a socket could have delivered. */
function cutAt (bytes: Buffer, offsets: readonly number[]): Buffer[] {
  const points = [...new Set(offsets.map((offset) => offset % (bytes.length + 1)))].sort((a, b) => a - b)
  return [0, ...points].map((start, index) => bytes.subarray(start, points[index] ?? bytes.length)).filter((chunk) => chunk.length > 0)
}

test('parseBody decodes a body in whatever chunks it arrived, characters split between chunks included', () => {
  const value = { parent: { metadata: { name: 'ü-€-😀', labels: { 'a\\"b': 'c' } } }, children: {} }
  const bytes = Buffer.from(JSON.stringify(value))
  for (let size = 1; size <= 5; size++) {
    const chunks = cutAt(bytes, Array.from({ length: bytes.length }, (_, index) => index * size))
    assert.deepEqual(parseBody({ chunks, length: bytes.length }, bodyLimits(1024 * 1024)), value)
  }
  const invalid = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xc3, 0x22, 0x7d])
  assert.deepEqual(parseBody({ chunks: cutAt(invalid, [6, 7]), length: invalid.length }, bodyLimits(1024)), { a: '\ufffd\ufffd' })
})

test('what lies between the brackets of a managedFields array is not checked: a body whose only fault is there is served as if it were not', async (t) => {
  const { app } = await build(t)
  const request = JSON.stringify(podSetRequest({ replicas: 2 }))
  const faulty = request.replace('"managedFields":[', '"managedFields":[1 2 nonsense , , {"a" "b" : :}, ')
  assert.throws(() => JSON.parse(faulty), SyntaxError)
  const [answer, expected] = [await postText(app, '/podset/sync', faulty), await postText(app, '/podset/sync', request)]
  assert.equal(answer.statusCode, 200)
  assert.deepEqual(answer.json(), expected.json())
})

test(`a body above the bound on values that nests deeper than ${MAX_DEPTH} levels gets 400 before it is parsed; ${MAX_DEPTH} levels are served`, async (t) => {
  const { app } = await build(t, { env: { HOOKS_BODY_LIMIT: '1Mi' } })
  const text = JSON.stringify(fixture('podset', 'first-sync'))
  const send = async (depth: number): Promise<{ statusCode: number, json: () => { message: string } }> => {
    // Padded past the bound on values (65,536 bytes at 1Mi), where bodies are looked at.
    const payload = `${text.slice(0, -1)},"nested":${'['.repeat(depth)}${']'.repeat(depth)},"padding":"${'a'.repeat(70_000)}"}`
    return await postText(app, '/podset/sync', payload)
  }
  assert.equal((await send(MAX_DEPTH - 2)).statusCode, 200, 'the body itself is one level, and nested in it')
  const refused = await send(MAX_DEPTH)
  assert.equal(refused.statusCode, 400)
  assert.match(refused.json().message, /^request body nests objects and arrays more than 10016 levels deep, deeper than anything the API server stores/)
  assert.equal((await send(50_000)).statusCode, 400)
})

test('a body whose Content-Length is wrong, a chunked body, a body of another type', async (t) => {
  const { app } = await build(t)
  const payload = JSON.stringify(fixture('podset', 'first-sync'))
  const chunked = await postText(app, '/podset/sync', payload, { 'transfer-encoding': 'chunked' })
  assert.equal(chunked.statusCode, 200)
  const text = await app.inject({ method: 'POST', url: '/podset/sync', payload, headers: { 'content-type': 'text/plain' } })
  assert.equal(text.statusCode, 415)
  assert.match(text.json().message, /Content-Type: application\/json/)
})
