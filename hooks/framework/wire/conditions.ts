import type { Condition } from './schemas.js'

export type ConditionStatus = Condition['status']

export interface ConditionInput {
  type: string
  status: ConditionStatus
  reason: string
  message: string
}

/**
 * Kubernetes timestamps carry whole seconds: `2026-11-22T18:46:34Z`. Every hook call stamps its time, so the text of
 * the last second is kept for the calls within it.
 */
export function kubernetesTime (date: Date): string {
  const second = Math.floor(date.getTime() / 1000)
  if (second !== lastSecond) {
    // toISOString() is `YYYY-MM-DDTHH:mm:ss.sssZ` for every year from 0 to 9999.
    lastText = `${date.toISOString().slice(0, 19)}Z`
    lastSecond = second
  }
  return lastText
}
let lastSecond = Number.NaN
let lastText = ''

/** The conditions of an observed status, keeping only well-formed entries. */
export function observedConditions (status: unknown): Condition[] {
  if (typeof status !== 'object' || status === null) return []
  const conditions = (status as { conditions?: unknown }).conditions
  if (!Array.isArray(conditions)) return []
  return conditions.filter((c): c is Condition =>
    typeof c === 'object' && c !== null && typeof c.type === 'string' && typeof c.status === 'string')
}

/**
 * Builds a condition that keeps the observed `lastTransitionTime` while its status does not change,
 * so that a resync of an unchanged object returns a byte-identical status.
 */
export function condition (input: ConditionInput, observed: readonly Condition[], generation: number | undefined, now: string): Condition {
  const previous = observed.find((c) => c.type === input.type)
  const lastTransitionTime = previous !== undefined && previous.status === input.status && typeof previous.lastTransitionTime === 'string'
    ? previous.lastTransitionTime
    : now
  const built: Condition = { type: input.type, status: input.status, reason: input.reason, message: input.message, lastTransitionTime }
  if (generation !== undefined) built.observedGeneration = generation
  return built
}
