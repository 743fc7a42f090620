import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AGING_MS, CpuTurns, LIGHT_STEP_BYTES } from '../../hooks/http/cpu-turns.js'

/** Asks for a turn for each of `weights` at once; the order their steps run in. */
async function order (turns: CpuTurns, weights: Array<[string, number]>): Promise<string[]> {
  const ran: string[] = []
  await Promise.all(weights.map(async ([name, weight]) => {
    await turns.turn(weight)
    ran.push(name)
  }))
  return ran
}

test('a light step runs at once when no other step waits; a heavy one waits for a turn of the event loop', async () => {
  const turns = new CpuTurns()
  assert.equal(turns.turn(LIGHT_STEP_BYTES - 1), undefined)
  assert.equal(turns.turn(544 * 1024), undefined, 'the body of a 100-pod PodSet sync is light')
  const heavy = turns.turn(LIGHT_STEP_BYTES)
  assert.ok(heavy instanceof Promise)
  assert.notEqual(turns.turn(1), undefined, 'behind a waiting step, a light one waits too')
  assert.equal(turns.queued, 2)
  await heavy
})

test('the lightest waiting step goes first, steps of one weight in the order they asked', async () => {
  const turns = new CpuTurns()
  assert.deepEqual(await order(turns, [['heavy', 3_000_000], ['first large', 1_000_000], ['second large', 1_000_000], ['small', 100]]),
    ['small', 'first large', 'second large', 'heavy'])
})

test('one step per turn of the event loop: never two back to back', async () => {
  const turns = new CpuTurns()
  const ran: string[] = []
  await Promise.all([
    turns.turn(LIGHT_STEP_BYTES)?.then(() => {
      ran.push('first')
      queueMicrotask(() => { ran.push('what the first left') })
    }),
    turns.turn(LIGHT_STEP_BYTES)?.then(() => { ran.push('second') })
  ])
  assert.deepEqual(ran, ['first', 'what the first left', 'second'])
})

test(`a waiting step weighs half as much every ${AGING_MS / 1000} s: a large one steps in however many small ones keep coming`, async () => {
  let now = 0
  const turns = new CpuTurns(() => now)
  const large = turns.turn(1024 * 1024)
  now += 10 * AGING_MS
  const small = turns.turn(2048)
  const ran: string[] = []
  await Promise.all([large?.then(() => ran.push('large')), small?.then(() => ran.push('small'))])
  assert.deepEqual(ran, ['large', 'small'], '1 MiB after 10 s weighs 1 KiB, less than a new 2 KiB step')
})
