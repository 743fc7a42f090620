import type { ServerProcess } from '../../dev/server-process.js'
import { CALL_BOUND_MS } from './hook-server.js'

/** PostgresWriter hook calls over HTTP, and what their answers said. */

export type Hook = 'sync' | 'finalize'

export interface Answer {
  hook: Hook
  /** undefined when no HTTP answer came (connection refused or reset, or the client gave up). */
  statusCode: number | undefined
  body: any
  error: string | undefined
  ms: number
}

/** POSTs one hook request; gives up (and records that as the error) after `timeoutMs`, so a hang cannot stall a test. */
export async function callHook (server: ServerProcess, hook: Hook, request: object, timeoutMs = 3 * CALL_BOUND_MS): Promise<Answer> {
  const started = performance.now()
  try {
    const response = await fetch(`${server.url}/postgres-writer/${hook}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
      signal: AbortSignal.timeout(timeoutMs)
    })
    const text = await response.text()
    let body: unknown
    try { body = JSON.parse(text) } catch { body = text }
    return { hook, statusCode: response.status, body, error: undefined, ms: performance.now() - started }
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code
    return { hook, statusCode: undefined, body: undefined, error: cause ?? String(error), ms: performance.now() - started }
  }
}

/**
 * What an answer said, for tallies and assertions: `Ready`, `finalized`, `Ready=False <reason>`,
 * `finalized=false <reason>`, `HTTP <code>`, or `no answer (<error>)`.
 */
export function outcomeOf (answer: Answer): string {
  if (answer.statusCode === undefined) return `no answer (${answer.error ?? 'unknown'})`
  if (answer.statusCode !== 200) return `HTTP ${answer.statusCode}`
  const ready = answer.body?.status?.conditions?.find((c: { type?: string }) => c.type === 'Ready')
  if (answer.hook === 'finalize') return answer.body.finalized === true ? 'finalized' : `finalized=false ${ready?.reason}`
  return ready?.status === 'True' ? 'Ready' : `Ready=False ${ready?.reason}`
}

/** The outcomes of a call refused because the database is unreachable or too slow. */
export const DATABASE_UNAVAILABLE_OUTCOMES = ['Ready=False DatabaseUnavailable', 'finalized=false DatabaseUnavailable']

/** How many answers had each outcome, by hook: `{ "sync: Ready": 12, ... }`. */
export function tally (answers: readonly Answer[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const answer of answers) {
    const outcome = `${answer.hook}: ${outcomeOf(answer)}`
    counts[outcome] = (counts[outcome] ?? 0) + 1
  }
  return counts
}

export function longestMs (answers: readonly Answer[]): number {
  return Math.round(Math.max(0, ...answers.map((a) => a.ms)))
}
