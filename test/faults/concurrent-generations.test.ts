import assert from 'node:assert/strict'
import { test } from 'node:test'
import { callHook, longestMs, outcomeOf, tally, type Answer } from './hook-calls.js'
import { startRig } from './hook-server.js'
import { rowsById } from '../helpers/postgres-writer-rows.js'
import { Writer, type Row, type WriterSpec } from './writers.js'

const GENERATIONS = 20
const ROUNDS = 10

/** Generation g's spec: every field says g, so a row mixing two submissions shows. */
function specOf (generation: number, table: string): WriterSpec {
  return { table, name: `name of generation ${generation}`, age: generation, country: `country of generation ${generation}` }
}

function sameState (row: Row, spec: WriterSpec): boolean {
  return row.table === spec.table && row.name === spec.name && row.age === spec.age && row.country === spec.country
}

interface Round {
  answers: Answer[]
  submitted: WriterSpec[]
  /** The writer's rows afterwards, in every table. */
  rows: Row[]
}

test('one parent synced concurrently with 20 generations: every row is one submitted state', async (t) => {
  const { postgres, schema, server } = await startRig(t, { PG_POOL_MAX: String(GENERATIONS) })
  const admin = await postgres.connect()

  /**
   * ROUNDS times, a new writer is created in `students`, then its generations 2 .. GENERATIONS+1 are synced all at
   * once, each carrying the status of the creation's answer (as concurrent Metacontroller workers would see it).
   */
  const syncGenerationsConcurrently = async (prefix: string, tableOf: (generation: number, round: number) => string): Promise<Round[]> => {
    const rounds: Round[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const writer = new Writer(`${prefix}-${round}`, specOf(1, 'students'))
      assert.equal(outcomeOf(await writer.call(server)), 'Ready')
      const submitted = Array.from({ length: GENERATIONS }, (_, i) => specOf(i + 2, tableOf(i + 2, round)))
      const requests = submitted.map((spec) => {
        writer.edit(spec)
        return writer.request()
      })
      const answers = await Promise.all(requests.map(async (request) => await callHook(server, 'sync', request)))
      assert.deepEqual(answers.map(outcomeOf), answers.map(() => 'Ready'), 'every concurrent sync succeeded')
      const rows = (await rowsById(admin, schema)).get(writer.id) ?? []
      assert.ok(rows.length > 0, `${writer.id} has a row`)
      for (const row of rows) assert.ok(submitted.some((spec) => sameState(row, spec)), `the row ${JSON.stringify(row)} is one submitted state, not a mix`)
      rounds.push({ answers, submitted, rows })
    }
    return rounds
  }

  await t.test('all in one table: exactly one row', async (t) => {
    const rounds = await syncGenerationsConcurrently('one-table', () => 'students')
    for (const round of rounds) assert.equal(round.rows.length, 1, `one row: ${JSON.stringify(round.rows)}`)
    t.diagnostic(summary(rounds))
  })

  await t.test('every fifth generation moving it to another table: no row is a mix', async (t) => {
    const rounds = await syncGenerationsConcurrently('two-tables', (generation, round) => (generation + round) % 5 === 0 ? 'graduates' : 'students')
    const inTwoTables = rounds.filter((r) => r.rows.length > 1).length
    t.diagnostic(summary(rounds))
    t.diagnostic(`rounds that ended with the row in two tables: ${inTwoTables} of ${rounds.length}`)

    // Syncs whose status.table is stale find the row gone from it and place it again under the row's advisory lock,
    // so the last placement wins and removes every other copy.
    assert.equal(inTwoTables, 0, 'the row ends in exactly one table')
  })
})

function summary (rounds: readonly Round[]): string {
  const answers = rounds.flatMap((r) => r.answers)
  const endings = rounds.map((r) => r.rows.map((row) => `${row.table}@${row.age}`).join('+'))
  return `${rounds.length} rounds of ${GENERATIONS} concurrent syncs: ${JSON.stringify(tally(answers))} (longest ${longestMs(answers)} ms); rows at the end (table@generation): ${endings.join(' ')}`
}
