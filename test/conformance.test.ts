import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { controllers } from '../hooks/controllers.js'
import { CompositeResponseSchema, DecoratorResponseSchema } from '../hooks/framework/wire/schemas.js'
import { build, emptyDatabase, NOW } from './helpers/app.js'

/**
 * Replays the hook calls recorded from real Metacontroller releases (test/fixtures/conformance/metacontroller-<version>/,
 * whose README says how they were recorded) and expects the recorded answers byte for byte: key order included, since
 * Metacontroller's 3-way merge and byte-identical resyncs depend on it.
 */

const corpora = join(import.meta.dirname, 'fixtures', 'conformance')

interface RecordedCondition { type: string, status: string, lastTransitionTime?: string }

interface RecordedCall {
  metacontroller: string
  hookVersion: string
  url: string
  request: { parent?: RecordedObject, object?: RecordedObject }
  response: { status?: { conditions?: RecordedCondition[] } }
}

interface RecordedObject { status?: { conditions?: RecordedCondition[] } }

const responseSchemas = {
  composite: TypeCompiler.Compile(CompositeResponseSchema),
  decorator: TypeCompiler.Compile(DecoratorResponseSchema)
}

function recordedCalls (corpus: string, controller: string): Array<{ file: string, call: RecordedCall }> {
  return readdirSync(join(corpora, corpus, controller)).filter((file) => file.endsWith('.json')).sort().map((file) => ({
    file: `${corpus}/${controller}/${file}`,
    call: JSON.parse(readFileSync(join(corpora, corpus, controller, file), 'utf8')) as RecordedCall
  }))
}

/**
 * The clock to replay a call with. A condition whose type and status the request already carried keeps its
 * lastTransitionTime, which must then come back verbatim. Any other condition changed during the call and was
 * stamped with the recording server's clock: the replay's clock is set to that time. An answer without such a
 * change is replayed at NOW, a time absent from the corpus, so that a carried time wrongly renewed shows.
 */
function clockOf (call: RecordedCall): Date {
  const observed = (call.request.parent ?? call.request.object)?.status?.conditions ?? []
  const stamped = new Set((call.response.status?.conditions ?? [])
    .filter((c) => !observed.some((o) => o.type === c.type && o.status === c.status))
    .map((c) => c.lastTransitionTime))
  assert.ok(stamped.size <= 1, `the recorded answer stamps several transition times (${[...stamped].join(', ')}); one call reads the clock once`)
  const [time] = stamped
  return time === undefined ? NOW : new Date(time)
}

/** Where two serializations first differ, with some context on each side. */
function firstDifference (actual: string, expected: string): string {
  let i = 0
  while (i < actual.length && actual[i] === expected[i]) i++
  const around = (text: string): string => JSON.stringify(text.slice(Math.max(0, i - 120), i + 120))
  return `first difference at character ${i}:\n  replayed: …${around(actual)}…\n  recorded: …${around(expected)}…`
}

const corpusNames = readdirSync(corpora).filter((name) => name.startsWith('metacontroller-')).sort()

test('a conformance corpus is there to replay', () => {
  assert.ok(corpusNames.length > 0, `no metacontroller-<version> folder in ${corpora}`)
})

for (const corpus of corpusNames) {
  test(`every call recorded from ${corpus} gets the recorded answer byte for byte, in order, and a valid v2 answer`, async (t) => {
    let now = NOW
    // PostgresWriter's messages name the schema (`public.students`): the recording server ran with the default PG_SCHEMA.
    const { app } = await build(t, { databaseUrl: await emptyDatabase(t, 'conformance'), env: { PG_SCHEMA: 'public' }, clock: () => now })
    const recorded = readdirSync(join(corpora, corpus))
    for (const name of recorded) {
      assert.ok(controllers.some((c) => c.name === name), `${join(corpora, corpus, name)} records a controller that hooks/controllers.ts does not register`)
    }
    for (const controller of controllers.filter((c) => recorded.includes(c.name))) {
      for (const { file, call } of recordedCalls(corpus, controller.name)) {
        await t.test(file, async () => {
          assert.equal(`metacontroller-${call.metacontroller}`, corpus)
          assert.equal(call.hookVersion, 'v2')
          now = clockOf(call)
          const response = await app.inject({ method: 'POST', url: call.url, payload: call.request })
          assert.equal(response.statusCode, 200, response.body)
          const expected = JSON.stringify(call.response)
          assert.ok(response.body === expected, `${file}: ${firstDifference(response.body, expected)}`)
          const check = responseSchemas[controller.type]
          const body: unknown = response.json()
          assert.ok(check.Check(body), `${file}: ${[...check.Errors(body)].map((e) => `${e.path} ${e.message}`).join('; ')}`)
        })
      }
    }
  })
}
