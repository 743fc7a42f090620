import { Agent, request as httpRequest, type IncomingMessage } from 'node:http'
import { performance } from 'node:perf_hooks'
import { text } from 'node:stream/consumers'
import { setTimeout as sleep } from 'node:timers/promises'
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

/**
 * Sends `load`'s request `callsPerSecond` times a second, evenly spaced, for `seconds`, over up to `connections`
 * kept-alive connections, whether or not earlier calls were answered (an open loop, as calls arrive from a busy
 * Metacontroller). autocannon's rate limit would not do: each connection sends its share of a second back to back,
 * then waits for the next second, so the server works at full speed and then idles.
 */
export async function pacedLoad (load: HttpLoad, callsPerSecond: number, connections: number, seconds: number): Promise<Sample> {
  const target = new URL(load.url)
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const expected = load.status ?? 200
  const latencies: number[] = []
  let unexpectedStatus = 0
  let errors = 0
  let lastAnswered = 0
  const send = async (): Promise<void> => {
    const body = typeof load.body === 'string' ? load.body : load.body()
    const sent = performance.now()
    try {
      const request = httpRequest({ agent, host: target.hostname, port: target.port, method: 'POST', path: load.path, headers: { 'content-type': 'application/json', ...load.headers, 'content-length': String(Buffer.byteLength(body)) } })
      const answered = new Promise<IncomingMessage>((resolve, reject) => { request.once('response', resolve).once('error', reject) })
      request.end(body)
      const response = await answered
      const answer = await text(response)
      lastAnswered = performance.now()
      latencies.push(lastAnswered - sent)
      if (response.statusCode !== expected) unexpectedStatus++
      else if (load.verifyBody !== undefined && !load.verifyBody(answer)) errors++
    } catch {
      errors++
    }
  }
  const interval = 1000 / callsPerSecond
  const calls: Array<Promise<void>> = []
  const start = performance.now()
  for (let index = 0; index < seconds * callsPerSecond; index++) {
    const wait = start + index * interval - performance.now()
    if (wait >= 1) await sleep(wait)
    calls.push(send())
  }
  await Promise.all(calls)
  agent.destroy()
  return { latenciesMs: latencies, seconds: ((latencies.length === 0 ? performance.now() : lastAnswered) - start) / 1000, unexpectedStatus, errors }
}
