import { getHeapSpaceStatistics } from 'node:v8'

/**
 * What a call makes in V8's young generation from its parse to its answer, per byte of its body, rounded up: a changed
 * 100-pod PodSet sync made 3.2 (1.6 of them its parse).
 */
export const YOUNG_BYTES_PER_BODY_BYTE = 4

/** The young generation's space for new objects, and how much of it is free, in bytes. */
export interface YoungSpace {
  capacity: number
  available: number
}

/** The young generation as V8 reports it now. */
export function youngSpace (): YoungSpace {
  const space = getHeapSpaceStatistics().find((each) => each.space_name === 'new_space')
  return space === undefined
    ? { capacity: 0, available: 0 }
    : { capacity: space.space_used_size + space.space_available_size, available: space.space_available_size }
}

/**
 * Collects the young generation now, before a call's body is parsed, when what the call will make fits the young
 * generation but not what is left of it; says whether it did. Left to V8, that collection falls inside a parse while
 * the body's text and half its objects are alive, as it does whenever several calls are in flight: the text moves to
 * the old generation and stays there until a full collection. Five 100-pod syncs in flight peaked at 116-121 MiB with
 * this, 148-151 without. Needs Node.js's `--expose-gc`, which the Deployment gives; without it, does nothing.
 */
export function makeYoungRoom (bodyBytes: number, collect = globalThis.gc): boolean {
  if (collect === undefined) return false
  const needed = bodyBytes * YOUNG_BYTES_PER_BODY_BYTE
  const { capacity, available } = youngSpace()
  if (needed <= available || needed > capacity) return false
  collect({ type: 'minor' })
  return true
}
