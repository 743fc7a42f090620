import { Agent, request as httpRequest, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { text } from 'node:stream/consumers'
import type pg from 'pg'
import { answerOutcome, callObject, type RecordedCall, type WriterRow } from '../dev/hook-recording.js'
import type { Sample } from './load.js'

/**
 * The replay of a burst of hook calls recorded from a real Metacontroller (dev/hook-recording.ts): sent to a hook
 * server as Metacontroller's workers send them, each answer checked against the recording, and the rows a replay
 * leaves read back.
 */

/** The burst the bench replays: recorded by `npm run bench:record` (test/e2e/record-burst.ts). */
export const BURST_FILE = join(import.meta.dirname, 'recordings', 'postgres-writer-burst.jsonl.gz')

/**
 * Calls in flight at once: Metacontroller's default of 5 workers per controller, rather than the concurrency of the
 * recording, which a replay at full speed would not keep anyway.
 */
export const REPLAY_CONCURRENCY = 5

/** A call to replay: its request, its object's key, and what the recording says of its answer. */
export interface ReplayCall {
  key: string
  path: string
  headers: Record<string, string>
  body: string
  status: number
  answer: string
}

const UUID = /\b([0-9a-f]{8})(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/g

/**
 * The calls of a recording, made about objects of their own for pass `pass` (0: as recorded): their namespace
 * renamed to `<namespace>-<pass>` and every uid changed the same way wherever it appears, so that one pass's rows and
 * tombstones never meet another's, in the same tables.
 */
export function callsOfPass (calls: readonly RecordedCall[], pass: number): ReplayCall[] {
  const namespaces = new Set(calls.map((call) => callObject(call).key.split('/')[0] as string))
  const rename = (body: string): string => {
    if (pass === 0) return body
    let renamed = body.replace(UUID, (_, first: string, rest: string) => `${((Number.parseInt(first, 16) ^ pass) >>> 0).toString(16).padStart(8, '0')}${rest}`)
    // The namespace as a value, and at the start of a row id (`"<namespace>/<name>"`, quoted in messages too).
    for (const namespace of namespaces) renamed = renamed.replaceAll(`"${namespace}"`, `"${namespace}-${pass}"`).replaceAll(`"${namespace}/`, `"${namespace}-${pass}/`)
    return renamed
  }
  return calls.map((call) => {
    const body = rename(call.body)
    return { key: callObject({ body }).key, path: call.path, headers: call.headers, body, status: call.status, answer: rename(call.answer) }
  })
}

/** What a replay gave: the load's sample, and each call's answer, in the calls' order. */
export interface Replayed {
  sample: Sample
  answers: Array<{ status: number, text: string }>
}

/** Headers a replay sets itself: the connection's, and the length of a body that a rename may have changed. */
const OWN_HEADERS = new Set(['content-length', 'host', 'connection', 'keep-alive', 'transfer-encoding'])

/**
 * Sends `calls` to the hook server at `url`, `concurrency` at a time over kept-alive connections: each worker takes
 * the earliest call whose object has no call in flight, as Metacontroller's work queue hands an object to one worker
 * at a time. A socket error counts as an error of the sample, and its answer has status 0.
 */
export async function replay (url: string, calls: readonly ReplayCall[], concurrency: number): Promise<Replayed> {
  const target = new URL(url)
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const answers: Replayed['answers'] = new Array(calls.length)
  const latencies: number[] = []
  const inFlight = new Set<string>()
  const waiting = calls.map((_, index) => index)
  let errors = 0
  /** The workers waiting for an object's call to end, woken at every end. */
  let sleepers: Array<() => void> = []
  const send = async (call: ReplayCall): Promise<{ status: number, text: string }> => {
    const headers = Object.fromEntries(Object.entries(call.headers).filter(([name]) => !OWN_HEADERS.has(name)))
    const sent = httpRequest({ agent, host: target.hostname, port: target.port, method: 'POST', path: call.path, headers: { ...headers, 'content-length': String(Buffer.byteLength(call.body)) } })
    const answered = new Promise<IncomingMessage>((resolve, reject) => { sent.once('response', resolve).once('error', reject) })
    sent.end(call.body)
    const response = await answered
    return { status: response.statusCode ?? 0, text: await text(response) }
  }
  const worker = async (): Promise<void> => {
    for (;;) {
      const at = waiting.findIndex((index) => !inFlight.has((calls[index] as ReplayCall).key))
      if (at === -1) {
        if (waiting.length === 0) return
        await new Promise<void>((resolve) => { sleepers.push(resolve) })
        continue
      }
      const [index] = waiting.splice(at, 1) as [number]
      const call = calls[index] as ReplayCall
      inFlight.add(call.key)
      const started = performance.now()
      answers[index] = await send(call).catch(() => {
        errors++
        return { status: 0, text: '' }
      })
      latencies.push(performance.now() - started)
      inFlight.delete(call.key)
      const woken = sleepers
      sleepers = []
      for (const resume of woken) resume()
    }
  }
  const started = performance.now()
  try {
    await Promise.all(Array.from({ length: concurrency }, worker))
  } finally {
    agent.destroy()
  }
  const unexpectedStatus = answers.filter((answer, index) => answer.status !== 0 && answer.status !== (calls[index] as ReplayCall).status).length
  return { sample: { latenciesMs: latencies, seconds: (performance.now() - started) / 1000, unexpectedStatus, errors }, answers }
}

/**
 * Whether an answer says what it must. This server's: what the recorded answer said, the Ready condition's status and
 * reason, and `finalized`. The naive hook's: Ready=True on a sync, `finalized` on a finalize; it knows no other.
 */
export function answerAsExpected (call: ReplayCall, answer: { status: number, text: string }, side: 'ours' | 'naive hook'): boolean {
  if (answer.status !== call.status) return false
  if (answer.status !== 200) return true
  let got: ReturnType<typeof answerOutcome>
  try {
    got = answerOutcome(answer.text)
  } catch {
    return false
  }
  const finalize = call.path.endsWith('/finalize')
  if (side === 'naive hook') return finalize ? got.finalized === true : got.ready === 'True'
  const recorded = answerOutcome(call.answer)
  return got.ready === recorded.ready && got.reason === recorded.reason && got.finalized === recorded.finalized
}

/** The rows of `calls`' objects found in `schema`, in the tables their specs name, sorted by id. */
export async function writerRowsFound (pool: pg.Pool, schema: string, calls: readonly ReplayCall[]): Promise<WriterRow[]> {
  const tables = new Set(calls.map((call) => (callObject(call).object.spec as { table: string }).table))
  const namespaces = [...new Set(calls.map((call) => call.key.split('/')[0] as string))]
  const found: WriterRow[] = []
  for (const table of tables) {
    const exists = await pool.query('SELECT to_regclass($1) IS NOT NULL AS present', [`"${schema}"."${table}"`])
    if (exists.rows[0]?.present !== true) continue
    const result = await pool.query<Omit<WriterRow, 'table'>>(
      `SELECT id, name, age, country FROM "${schema}"."${table}" WHERE split_part(id, '/', 1) = ANY($1::text[])`, [namespaces])
    found.push(...result.rows.map((row) => ({ table, ...row })))
  }
  return found.sort((a, b) => a.id.localeCompare(b.id))
}
