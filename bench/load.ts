import { performance } from 'node:perf_hooks'
import autocannon, { type Request } from 'autocannon'
import type pg from 'pg'

/** Drives load at a fixed concurrency for a fixed time, and measures what each run and the server did. */

export interface Measurement {
  requests: number
  seconds: number
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** Answers with another status than the case expects (200, or 304 for a resync with its ETag). */
  unexpectedStatus: number
  /** Socket errors, timeouts, and answers that failed the body check. */
  errors: number
}

function percentile (sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN
}

/** What one stretch of load recorded; the stretches of a case add up to its measurement. */
export interface Sample {
  latenciesMs: number[]
  seconds: number
  unexpectedStatus: number
  errors: number
}

export function measurement (samples: readonly Sample[]): Measurement {
  const sorted = Float64Array.from(samples.flatMap((sample) => sample.latenciesMs)).sort()
  const seconds = samples.reduce((sum, sample) => sum + sample.seconds, 0)
  return {
    requests: sorted.length,
    seconds,
    requestsPerSecond: sorted.length / seconds,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    maxMs: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1] ?? Number.NaN,
    unexpectedStatus: samples.reduce((sum, sample) => sum + sample.unexpectedStatus, 0),
    errors: samples.reduce((sum, sample) => sum + sample.errors, 0)
  }
}

export interface HttpLoad {
  url: string
  path: string
  /** A fixed body, or a new one for every request. */
  body: string | (() => string)
  /** Sent with every request besides `content-type: application/json`, e.g. `if-none-match`. */
  headers?: Record<string, string>
  /** The status every answer must have (default 200); another counts as an error. */
  status?: number
  /** An answer that fails this check counts as an error (a PostgresWriter hook answers 200 with Ready=False). */
  verifyBody?: (body: string) => boolean
}

/**
 * How long a stretch of load lasts: a time, or a number of requests, all answered before it ends (for bodies of
 * megabytes, where a cut-off stretch would leave CPU time spent on requests it never counts).
 */
export type Length = { seconds: number } | { requests: number }

/**
 * Runs autocannon; latencies come from its per-response event, which has sub-millisecond resolution, and so does the
 * stretch's time: from the first request sent to the last answer. autocannon's own duration also counts building
 * each connection's copy of the request and the wait for its next sample (every 100 ms): a stretch of four 304s to
 * 2,000-pod requests took 60 ms, and autocannon said 170.
 */
export async function httpLoad (load: HttpLoad, connections: number, length: Length): Promise<Sample> {
  const { body } = load
  const request: Request = typeof body === 'string'
    // A Buffer, which autocannon sends as it is, instead of encoding the text again for every connection.
    ? { method: 'POST', path: load.path, body: Buffer.from(body) }
    : { method: 'POST', path: load.path, setupRequest: (next) => ({ ...next, body: body() }) }
  const latencies: number[] = []
  let firstSent = Number.POSITIVE_INFINITY
  let lastAnswered = 0
  const expected = load.status ?? 200
  let unexpected = 0
  const instance = autocannon({
    url: load.url,
    connections,
    ...('seconds' in length ? { duration: length.seconds } : { amount: length.requests }),
    // Above any latency of a run, so that a slow multi-megabyte sync counts as slow, not as failed.
    timeout: 600,
    // autocannon notices the end of a run at its next sample: every 100 ms instead of every second.
    sampleInt: 100,
    headers: { 'content-type': 'application/json', ...load.headers },
    requests: [request],
    ...(load.verifyBody === undefined ? {} : { verifyBody: load.verifyBody })
  })
  instance.on('response', (_client, statusCode, _bytes, milliseconds) => {
    const now = performance.now()
    firstSent = Math.min(firstSent, now - milliseconds)
    lastAnswered = now
    latencies.push(milliseconds)
    if (statusCode !== expected) unexpected++
  })
  const result = await instance
  const seconds = latencies.length === 0 ? result.duration : (lastAnswered - firstSent) / 1000
  return { latenciesMs: latencies, seconds, unexpectedStatus: unexpected, errors: result.errors + result.mismatches }
}

/** `connections` workers, each running `query` on the pool back to back: the database's own limit. */
export async function poolLoad (pool: pg.Pool, query: () => [string, unknown[]], connections: number, seconds: number): Promise<Sample> {
  const latencies: number[] = []
  let errors = 0
  const start = performance.now()
  const end = start + seconds * 1000
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const [text, values] = query()
      const sent = performance.now()
      try {
        await pool.query(text, values)
        latencies.push(performance.now() - sent)
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: connections }, worker))
  return { latenciesMs: latencies, seconds: (performance.now() - start) / 1000, unexpectedStatus: 0, errors }
}
