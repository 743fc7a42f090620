import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BodyBudget } from '../../hooks/http/body-admission.js'

/** hooks/http/body-admission.ts: the memory budget bodies are admitted into. */

test('BodyBudget admits in arrival order within its capacity, always one body, and lets a waiting request leave', async () => {
  const budget = new BodyBudget(100)
  const admitted: string[] = []
  const ticket = (name: string, bytes: number): { release: () => void, admitted: Promise<void> } => {
    const t = budget.ticket(bytes)
    t.admitted.then(() => admitted.push(name), () => admitted.push(`${name} left`))
    return t
  }
  const huge = ticket('huge', 500)
  const a = ticket('a', 60)
  const b = ticket('b', 30)
  const c = ticket('c', 20)
  await Promise.resolve()
  assert.deepEqual(admitted, ['huge'])
  huge.release()
  huge.release()
  await Promise.resolve()
  assert.deepEqual(admitted, ['huge', 'a', 'b'])
  c.release()
  await Promise.resolve()
  assert.deepEqual(admitted, ['huge', 'a', 'b', 'c left'])
  const d = ticket('d', 20)
  await Promise.resolve()
  assert.deepEqual(admitted, ['huge', 'a', 'b', 'c left'])
  a.release()
  await Promise.resolve()
  assert.deepEqual(admitted, ['huge', 'a', 'b', 'c left', 'd'])
  b.release()
  d.release()
})
