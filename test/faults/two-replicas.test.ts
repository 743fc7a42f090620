import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startPostgres } from '../../dev/postgres-process.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { callHook, longestMs, outcomeOf, tally, type Answer } from './hook-calls.js'
import { startHookServer, testSchema } from './hook-server.js'
import { rowsById } from '../helpers/postgres-writer-rows.js'
import { forEachConcurrently, Writer, type WriterSpec } from './writers.js'

/**
 * Two replicas of the hook server on one database, as during a rollout, and Metacontroller's calls spread over them:
 * a sync racing the finalize of the same object, then a new object of the same name created while late calls of the
 * finalized one still arrive. After each round the database must hold exactly the rows of the objects that exist.
 * Some rounds give the replicas different PG_TABLE_ALLOWLIST values: a rollout that narrows it.
 */

const ROUNDS = 10
const WRITERS = 25
const TABLES = ['students', 'graduates', 'alumni']

interface Replica { name: string, tables: readonly string[], server: ServerProcess }

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T

/** Calls `hook` until the answer is final (a finalize that went through; a sync written or refused for good). */
async function until (replica: Replica, writer: Writer, done: (answer: Answer) => boolean, answers: Answer[]): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await writer.call(replica.server)
    answers.push(answer)
    if (done(answer) || attempt === 5) return answer
  }
}

/** What one object's life came to, as the database shows it after each step; '' where it held as it must. */
interface Lifecycle { afterRace: string, afterRecreate: string, afterDelete: string }

for (const [configuration, allowlists] of [
  ['the same configuration', [undefined, undefined]],
  ['PG_TABLE_ALLOWLIST narrowed on one of them', ['students,graduates,alumni', 'students,graduates']]
] as const) {
  test(`two replicas with ${configuration}: syncs against finalizes, and a new object against late calls of the finalized one`, async (t) => {
    const postgres = await startPostgres()
    t.after(async () => { await postgres.remove() })
    const schema = testSchema()
    const replicas: Replica[] = await Promise.all(allowlists.map(async (allowlist, i) => ({
      name: `replica ${i}`,
      tables: allowlist?.split(',') ?? TABLES,
      server: await startHookServer(t, { DATABASE_URL: postgres.connectionString, PG_SCHEMA: schema, ...(allowlist === undefined ? {} : { PG_TABLE_ALLOWLIST: allowlist }) })
    })))
    const admin = await postgres.connect()
    const answers: Answer[] = []
    const broken: string[] = []

    const rowsOf = async (writer: Writer): Promise<string> => JSON.stringify((await rowsById(admin, schema)).get(writer.id) ?? [])
    const spec = (table: string, age: number): WriterSpec => ({ table, name: 'racer', age, country: 'chile' })

    const lifecycle = async (writer: Writer): Promise<Lifecycle> => {
      const life: Lifecycle = { afterRace: '', afterRecreate: '', afterDelete: '' }
      const [first, second] = (Math.random() < 0.5 ? replicas : [...replicas].reverse()) as [Replica, Replica]
      assert.equal(outcomeOf(await until(first, writer, (a) => outcomeOf(a) === 'Ready', answers)), 'Ready')

      // A sync (an edit that may move the row) races the finalize, each on either replica.
      writer.edit(spec(pick(second.tables), writer.spec.age + 1))
      const lateSync = writer.request()
      writer.delete()
      const finalize = writer.request()
      const [synced, finalized] = await Promise.all([callHook(second.server, 'sync', lateSync), callHook(first.server, 'finalize', finalize)])
      answers.push(synced, finalized)
      writer.observe(finalized)
      if (!writer.gone) await until(pick(replicas), writer, (a) => outcomeOf(a) === 'finalized', answers)
      if (await rowsOf(writer) !== '[]') life.afterRace = `a row after the finalize: ${await rowsOf(writer)} (sync ${outcomeOf(synced)}, finalize ${outcomeOf(finalized)})`

      // A new object of the same name, while the finalized one's late calls arrive at the other replica.
      const creator = pick(replicas)
      const late = replicas.find((r) => r !== creator) as Replica
      writer.edit(spec(pick(creator.tables), 100 + writer.spec.age))
      const [created, lateSyncAgain, lateFinalize] = await Promise.all([
        writer.call(creator.server),
        callHook(late.server, 'sync', lateSync),
        callHook(late.server, 'finalize', finalize)
      ])
      answers.push(created, lateSyncAgain, lateFinalize)
      if (outcomeOf(created) !== 'Ready') await until(creator, writer, (a) => outcomeOf(a) === 'Ready', answers)
      const expected = JSON.stringify([{ id: writer.id, name: 'racer', age: writer.spec.age, country: 'chile', table: writer.spec.table }])
      if (await rowsOf(writer) !== expected) life.afterRecreate = `rows ${await rowsOf(writer)}, expected ${expected} (late sync ${outcomeOf(lateSyncAgain)}, late finalize ${outcomeOf(lateFinalize)})`

      writer.delete()
      await until(pick(replicas), writer, (a) => outcomeOf(a) === 'finalized', answers)
      if (await rowsOf(writer) !== '[]') life.afterDelete = `a row after the new object's finalize: ${await rowsOf(writer)}`
      return life
    }

    for (let round = 0; round < ROUNDS; round++) {
      const writers = Array.from({ length: WRITERS }, (_, i) => new Writer(`racer-${round}-${i}`, spec(pick(TABLES.slice(0, 2)), i)))
      await forEachConcurrently(writers, WRITERS, async (writer) => {
        const life = await lifecycle(writer)
        for (const [step, problem] of Object.entries(life)) if (problem !== '') broken.push(`round ${round}, ${writer.id}, ${step}: ${problem}`)
      })
      assert.deepEqual(broken.slice(0, 5), [], `round ${round}: ${broken.length} lifecycles broke one row per object`)
      // Checked from the database after the round: nothing left of any of its objects.
      const left = [...(await rowsById(admin, schema)).keys()].filter((id) => writers.some((w) => w.id === id))
      assert.deepEqual(left, [], `round ${round}: rows left`)
    }

    t.diagnostic(`${ROUNDS * WRITERS} object lifecycles, ${answers.length} calls over ${replicas.map((r) => `${r.name} (${r.tables.join(',')})`).join(' and ')}: ${JSON.stringify(tally(answers))}, longest ${longestMs(answers)} ms; broken ${broken.length}`)
    assert.ok(answers.every((a) => a.statusCode === 200), 'every call answered 200')
  })
}
