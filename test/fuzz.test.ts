import assert from 'node:assert/strict'
import { test } from 'node:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import fc from 'fast-check'
import type pg from 'pg'
import { hookNames, type Controller } from '../hooks/framework/controller.js'
import { controllers } from '../hooks/controllers.js'
import { CompositeResponseSchema, DecoratorResponseSchema } from '../hooks/framework/wire/schemas.js'
import { PostgresWriterSpecSchema } from '../hooks/postgres-writer/resource.js'
import { build, postText } from './helpers/app.js'
import { fixture, requestFixtures } from './helpers/fixtures.js'

/**
 * Property-based fuzzing of every hook: whatever arrives, in the parent (its spec above all) or in any observed child,
 * the server answers 200 (a valid v2 answer), 400, 413 or 422, never 500, and never crashes; every storable value
 * reaches PostgreSQL byte for byte, as a parameter.
 */

const ACCEPTABLE = [200, 400, 413, 422]
const RUNS = 200

type Json = Record<string, any>
type Path = Array<string | number>
type App = Awaited<ReturnType<typeof build>>['app']

/** Stands for a value nested too deeply to build as an object (JSON.stringify would overflow the stack): spliced in as text. */
const DEEP = '\u0000deep\u0000'

/** JSON text nested `depth` levels deep: objects, arrays, or both in turn. */
function deepJson (depth: number, shape: 'object' | 'array' | 'mixed'): string {
  const open = shape === 'object' ? '{"a":' : shape === 'array' ? '[' : '{"a":['
  const close = shape === 'object' ? '}' : shape === 'array' ? ']' : ']}'
  const levels = shape === 'mixed' ? Math.ceil(depth / 2) : depth
  return open.repeat(levels) + '1' + close.repeat(levels)
}

const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'binary-ascii', maxLength: 80 }),
  fc.constantFrom("'; DROP TABLE students; --", '"x"', '$1', '%s %n', '\\', '\u0000', '\ud800', '__proto__', 'constructor', 'a'.repeat(63), 'a'.repeat(64), '🐘'.repeat(20),
    '', '0', '-1Gi', '9Ei', '100m', '1e999', 'Bound', 'Running', 'Failed'),
  fc.string({ minLength: 10_000, maxLength: 20_000 }).map((s) => s.repeat(10))
)

const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.constantFrom(2 ** 53 + 2, 2 ** 63, -0, 1e300),
    fc.boolean(),
    fc.constant(null),
    fc.constant(DEEP),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'prototype')), tie('value'), { maxKeys: 4 })
  )
})).value

const responseSchemas = { composite: TypeCompiler.Compile(CompositeResponseSchema), decorator: TypeCompiler.Compile(DecoratorResponseSchema) }

/** Posts `request` with every DEEP marker replaced by `deep`; checks the status, and that a 200 is a valid v2 answer. */
async function post (app: App, controller: Controller, hook: string, request: unknown, deep = deepJson(20_000, 'mixed')): Promise<number> {
  const payload = JSON.stringify(request).replaceAll(JSON.stringify(DEEP), deep)
  const url = `/${controller.name}/${hook}`
  const response = await postText(app, url, payload)
  assert.ok(ACCEPTABLE.includes(response.statusCode), `${url} answered ${response.statusCode}: ${response.body.slice(0, 300)}`)
  if (response.statusCode === 200) {
    assert.ok(responseSchemas[controller.type].Check(response.json()), `${url} answered 200 with a body that is not a v2 answer: ${response.body.slice(0, 300)}`)
  }
  return response.statusCode
}

/** Every path to a value inside `value`, nested objects and arrays included. */
function pathsIn (value: unknown, prefix: Path = []): Path[] {
  if (typeof value !== 'object' || value === null) return []
  return Object.entries(value).flatMap(([key, inner]) => {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key]
    return [path, ...pathsIn(inner, path)]
  })
}

function setAt (root: Json, path: Path, value: unknown): void {
  const parent = path.slice(0, -1).reduce<any>((object, key) => object[key], root)
  parent[path[path.length - 1] as string | number] = value
}

/** The parent of a hook request: a composite's `parent`, a decorator's `object`. */
const parentOf = (request: Json): Json => request.parent ?? request.object

/** The observed objects of a request, each with its path: `children` (composites) or `attachments` (decorators). */
function observedIn (request: Json): Array<{ kind: string, path: Path, object: Json }> {
  const field = 'children' in request ? 'children' : 'attachments'
  return Object.entries(request[field] as Record<string, Record<string, Json>>).flatMap(([group, objects]) =>
    Object.entries(objects).map(([key, object]) => ({ kind: group, path: [field, group, key], object })))
}

const requests = new Map(controllers.map((c) => [c.name, requestFixtures(c.name)]))

function requestOf (controller: Controller, pick: number): Json {
  const fixtures = requests.get(controller.name) ?? []
  return structuredClone(fixtures[pick % fixtures.length]) as Json
}

/** Every kind of observed child in the fixtures, with the controller whose requests hold it. */
const observedKinds = controllers.flatMap((controller) => {
  const kinds = new Set((requests.get(controller.name) ?? []).flatMap((request) => observedIn(request).map((observed) => observed.kind)))
  return [...kinds].map((kind) => ({ controller: controller.name, kind }))
})

// The properties below draw RUNS_EACH cases for each controller, so that a controller added to the registry is held to
// them as the others are.
const RUNS_EACH = RUNS / 4

for (const controller of controllers) {
  test(`${controller.name}: random JSON bodies never get a 500`, async (t) => {
    const { app } = await build(t, { controllers: [controller], env: { PG_TABLE_ALLOWLIST: 'students' } })
    await fc.assert(fc.asyncProperty(fc.constantFrom(...hookNames(controller)), fc.jsonValue({ maxDepth: 6 }), async (hook, body) => {
      await post(app, controller, hook, body)
    }), { numRuns: RUNS_EACH })
  })

  test(`${controller.name}: a hostile value anywhere in the parent (its spec, metadata or status) never gets a 500`, async (t) => {
    const { app } = await build(t, { controllers: [controller] })
    await fc.assert(fc.asyncProperty(fc.nat(), fc.nat(), hostileValue, async (pick, where, value) => {
      const request = requestOf(controller, pick)
      const parent = parentOf(request)
      // Half the time somewhere in the spec (the whole spec, one field, or deeper), else anywhere in the parent.
      const inSpec = pathsIn(parent.spec).map((path) => ['spec', ...path])
      const targets: Path[] = where % 2 === 0 ? [['spec'], ...inSpec] : [['spec'], ['status'], ['metadata', 'labels'], ['metadata', 'name'], ...pathsIn(parent)]
      setAt(parent, targets[Math.floor(where / 2) % targets.length] as Path, value)
      for (const hook of hookNames(controller)) await post(app, controller, hook, request)
    }), { numRuns: RUNS_EACH })
  })

  const kinds = observedKinds.filter((observed) => observed.controller === controller.name).map((observed) => observed.kind)
  test(`${controller.name}: a hostile value anywhere in an observed child, of every kind, never gets a 500`, { skip: kinds.length === 0 && 'its fixtures observe no child' }, async (t) => {
    const { app } = await build(t, { controllers: [controller] })
    await fc.assert(fc.asyncProperty(fc.constantFrom(...kinds), fc.nat(), fc.nat(), hostileValue, async (kind, pick, where, value) => {
      const fixtures = (requests.get(controller.name) ?? []).filter((request) => observedIn(request).some((o) => o.kind === kind))
      const request = structuredClone(fixtures[pick % fixtures.length]) as Json
      const candidates = observedIn(request).filter((o) => o.kind === kind)
      const child = candidates[where % candidates.length] as ReturnType<typeof observedIn>[number]
      const targets: Path[] = [['spec'], ['status'], ...pathsIn(child.object)]
      setAt(request, [...child.path, ...targets[Math.floor(where / candidates.length) % targets.length] as Path], value)
      for (const hook of hookNames(controller)) await post(app, controller, hook, request)
    }), { numRuns: RUNS_EACH })
  })

  test(`${controller.name}: nesting 20,000 levels deep anywhere in the parent's spec and three levels into every observed child's, 100,000 in whole specs and statuses, 1,000,000 in the parent's, is answered, not crashed on`, async (t) => {
    const { app } = await build(t, { controllers: [controller] })
    type Nesting = Parameters<typeof deepJson>
    const cases: Array<{ request: Json, path: Path, depths: Nesting[] }> = []
    const depthsAt = (path: Path, parent: boolean): Nesting[] =>
      path.length > 1 ? [[20_000, 'mixed']] : parent ? [[100_000, 'object'], [1_000_000, 'array']] : [[100_000, 'object']]
    const within = (object: Json | undefined, levels = Infinity): Path[] =>
      [['spec'], ['status'], ...pathsIn(object?.spec).filter((path) => path.length <= levels).map((path) => ['spec', ...path])]
    const first = requestOf(controller, 0)
    const field = 'parent' in first ? 'parent' : 'object'
    for (const path of within(first[field])) cases.push({ request: first, path: [field, ...path], depths: depthsAt(path, true) })
    for (const kind of kinds) {
      const request = (requests.get(controller.name) ?? []).find((r) => observedIn(r).some((o) => o.kind === kind)) as Json
      const child = observedIn(request).find((o) => o.kind === kind) as ReturnType<typeof observedIn>[number]
      for (const path of within(child.object, 3)) cases.push({ request, path: [...child.path, ...path], depths: depthsAt(path, false) })
    }
    let calls = 0
    for (const { request, path, depths } of cases) {
      const mutated = structuredClone(request)
      setAt(mutated, path, DEEP)
      for (const nesting of depths) {
        for (const hook of hookNames(controller)) {
          await post(app, controller, hook, mutated, deepJson(...nesting))
          calls++
        }
      }
    }
    t.diagnostic(`${calls} deeply nested requests, at ${cases.length} places, all answered without a 500`)
  })
}

test('prototype keys in a body are refused, not obeyed', async (t) => {
  const { app } = await build(t)
  const text = JSON.stringify(fixture('postgres-writer', 'sync-create'))
  for (const [where, from, to] of [
    ['metadata', '"metadata":{', '"metadata":{"__proto__":{"polluted":true},'],
    ['the spec', '"spec":{"table"', '"spec":{"__proto__":{"polluted":true},"table"']
  ] as const) {
    const payload = text.replace(from, to)
    assert.notEqual(payload, text)
    const response = await postText(app, '/postgres-writer/sync', payload)
    assert.equal(response.statusCode, 400, where)
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined)
})

test('every storable hostile string is stored byte for byte, as a parameter', async (t) => {
  const { app, pool, schema } = await build(t)
  // Within the CRD's bounds: a longer text is InvalidSpec, as the API server would have refused it.
  const { name: nameSchema, country: countrySchema } = PostgresWriterSpecSchema.properties
  const longest = Math.min(nameSchema.maxLength ?? Infinity, countrySchema.maxLength ?? Infinity)
  const storable = hostileString.filter((s) => !s.includes('\u0000') && s.isWellFormed() && s.length <= longest)
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
