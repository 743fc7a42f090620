import assert from 'node:assert/strict'
import { test } from 'node:test'
import { makeYoungRoom, youngSpace, YOUNG_BYTES_PER_BODY_BYTE, type YoungSpace } from '../../hooks/http/young-generation.js'

/** A stand-in for `--expose-gc`'s `gc` that records what it was asked to collect, and collects nothing. */
function recordingCollector (): { asked: unknown[], collect: NodeJS.GCFunction } {
  const asked: unknown[] = []
  return { asked, collect: ((options: unknown) => { asked.push(options) }) as NodeJS.GCFunction }
}

/**
 * Makes young garbage until the young generation is in the state `wanted` describes: V8 collects it when it is full,
 * after which most of it is free again.
 */
function youngGarbageUntil (wanted: (space: YoungSpace) => boolean): YoungSpace {
  let garbage: unknown[] = []
  for (let space = youngSpace(); ; space = youngSpace()) {
    if (wanted(space)) return space
    garbage = new Array(1024).fill(garbage.length)
  }
}

test('V8 reports a young generation of at least 512 KiB, with no more room left in it than its size', () => {
  const { capacity, available } = youngSpace()
  assert.ok(capacity >= 512 * 1024, `capacity ${capacity}`)
  assert.ok(available >= 0 && available <= capacity, `available ${available} of ${capacity}`)
})

test('a call whose objects fit what is left of the young generation is left to V8', () => {
  const { collect, asked } = recordingCollector()
  const { available } = youngGarbageUntil((space) => space.available > space.capacity / 2)
  assert.equal(makeYoungRoom(Math.floor(available / YOUNG_BYTES_PER_BODY_BYTE / 2), collect), false)
  assert.deepEqual(asked, [])
})

test('a call whose objects do not fit what is left, but fit the young generation, has it collected first', () => {
  const { collect, asked } = recordingCollector()
  const { capacity } = youngGarbageUntil((space) => space.available < space.capacity / 4)
  assert.equal(makeYoungRoom(Math.ceil(capacity / 2 / YOUNG_BYTES_PER_BODY_BYTE), collect), true)
  assert.deepEqual(asked, [{ type: 'minor' }], 'a young-generation collection, not a full one')
})

test('a call larger than the young generation is left to V8: collecting first would not make it fit', () => {
  const { collect, asked } = recordingCollector()
  const { capacity } = youngGarbageUntil((space) => space.available < space.capacity / 4)
  assert.equal(makeYoungRoom(capacity, collect), false)
  assert.deepEqual(asked, [])
})

test('without --expose-gc, as under `npm start`, nothing is collected', { skip: globalThis.gc !== undefined && 'this process runs with --expose-gc' }, () => {
  const { capacity } = youngGarbageUntil((space) => space.available < space.capacity / 4)
  assert.equal(makeYoungRoom(Math.ceil(capacity / 2 / YOUNG_BYTES_PER_BODY_BYTE)), false)
})
