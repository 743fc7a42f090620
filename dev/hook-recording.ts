import { once } from 'node:events'
import { readFile, writeFile } from 'node:fs/promises'
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { buffer } from 'node:stream/consumers'
import { gunzipSync, gzipSync } from 'node:zlib'

/**
 * Hook calls recorded as Metacontroller made them, for the benchmark to replay: a proxy in front of a hook server
 * that records every call (its path, headers and body, and the answer) in the order they came, the file they are kept
 * in, and what a PostgresWriter recording says the database must hold at its end. test/e2e/record-burst.ts records
 * one on the end-to-end rig; bench/replay.ts replays it.
 */

/** One hook call as the proxy saw it. */
export interface RecordedCall {
  /** Milliseconds from the start of the recording to the request's arrival, and to the end of its answer. */
  sentAt: number
  answeredAt: number
  method: string
  path: string
  /** The request's headers as sent, names in lowercase, but `authorization`: a secret, and not the hook's input. */
  headers: Record<string, string>
  body: string
  status: number
  answer: string
}

/** Where a recording comes from. */
export interface RecordingHeader {
  metacontroller: string
  kubernetes: string
  /** When the recording started (ISO 8601). */
  recordedAt: string
  /** What was done while recording, in a sentence. */
  scenario: string
  /** Objects applied at once, and of those, how many were deleted at the end. */
  objects: number
  deleted: number
  resyncPeriodSeconds: number
}

export interface Recording {
  header: RecordingHeader
  calls: RecordedCall[]
}

/** The lines of the file: the header, then one call per line, gzipped. */
export async function writeRecording (file: string, recording: Recording): Promise<void> {
  const lines = [recording.header, ...recording.calls].map((line) => JSON.stringify(line)).join('\n')
  await writeFile(file, gzipSync(`${lines}\n`, { level: 9 }))
}

export async function readRecording (file: string): Promise<Recording> {
  const [header, ...calls] = gunzipSync(await readFile(file)).toString('utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as unknown)
  return { header: header as RecordingHeader, calls: calls as RecordedCall[] }
}

/** What the proxy forwards and records of a request's headers: all but the secret and those of the connection. */
const LEFT_OUT = new Set(['authorization', 'host', 'connection', 'keep-alive', 'transfer-encoding'])

function recordedHeaders (headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(headers)
    .filter((entry): entry is [string, string | string[]] => entry[1] !== undefined && !LEFT_OUT.has(entry[0]))
    .map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value]))
}

export interface RecordingProxy {
  /** `http://127.0.0.1:<port>`: the hook server's address for Metacontroller. */
  url: string
  /** The calls recorded since the proxy started or since the last `restart()`, in the order they came. */
  calls: () => RecordedCall[]
  /** Forgets the calls recorded so far; the recording's clock starts again. */
  restart: () => void
  close: () => Promise<void>
}

/**
 * A proxy on 127.0.0.1 in front of the hook server at `target` that forwards every request as it came (the
 * `authorization` header included) and records it with its answer. A request it could not forward is answered 502
 * and recorded so.
 */
export async function startRecordingProxy (target: string): Promise<RecordingProxy> {
  const upstream = new URL(target)
  let recorded: RecordedCall[] = []
  let start = performance.now()
  const forward = async (request: IncomingMessage, body: Buffer): Promise<{ status: number, headers: IncomingHttpHeaders, answer: Buffer }> => {
    const { authorization } = request.headers
    const sent = httpRequest({
      host: upstream.hostname,
      port: upstream.port,
      method: request.method,
      path: request.url,
      headers: { ...recordedHeaders(request.headers), ...authorization === undefined ? {} : { authorization }, 'content-length': String(body.length) },
      timeout: 60_000
    })
    sent.end(body)
    const [response] = await once(sent, 'response') as [IncomingMessage]
    return { status: response.statusCode ?? 502, headers: response.headers, answer: await buffer(response) }
  }
  const server = createServer((request, response) => {
    const sentAt = performance.now() - start
    const epoch = start
    void (async () => {
      const body = await buffer(request)
      const { status, headers, answer } = await forward(request, body).catch((error: Error) =>
        ({ status: 502, headers: { 'content-type': 'text/plain' }, answer: Buffer.from(`recording proxy: ${error.message}`) }))
      response.writeHead(status, recordedHeaders(headers)).end(answer)
      // A call that began before a restart belongs to no recording.
      if (epoch !== start) return
      recorded.push({
        sentAt,
        answeredAt: performance.now() - start,
        method: request.method ?? 'GET',
        path: request.url ?? '/',
        headers: recordedHeaders(request.headers),
        body: body.toString('utf8'),
        status,
        answer: answer.toString('utf8')
      })
    })()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => [...recorded].sort((a, b) => a.sentAt - b.sentAt),
    restart: () => {
      recorded = []
      start = performance.now()
    },
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    }
  }
}

/** A call's object: the `object` of a decorator's request, the `parent` of a composite's. */
interface HookObject {
  metadata: { namespace?: string, name: string, uid?: string, resourceVersion?: string }
  spec?: Record<string, unknown>
}

/** A call's object, and its key: `namespace/name`, the one Metacontroller queues it under. */
export function callObject (call: Pick<RecordedCall, 'body'>): { key: string, object: HookObject } {
  const request = JSON.parse(call.body) as { object?: HookObject, parent?: HookObject }
  const object = request.object ?? request.parent
  if (object === undefined) throw new Error('a recorded call carries neither an object nor a parent: is it a hook request?')
  return { key: `${object.metadata.namespace ?? ''}/${object.metadata.name}`, object }
}

export type CallKind = 'create' | 'update' | 'resync' | 'finalize'

/**
 * Each call's kind: an object's first sync is its create; a sync of an object changed since its last call (a new
 * resourceVersion: its status written, or its spec changed) an update; a sync of an unchanged one a resync.
 */
export function callKinds (calls: ReadonlyArray<Pick<RecordedCall, 'path' | 'body'>>): CallKind[] {
  const versions = new Map<string, string | undefined>()
  return calls.map((call) => {
    const { key, object } = callObject(call)
    const seen = versions.has(key)
    const previous = versions.get(key)
    versions.set(key, object.metadata.resourceVersion)
    if (call.path.endsWith('/finalize')) return 'finalize'
    return !seen ? 'create' : previous === object.metadata.resourceVersion ? 'resync' : 'update'
  })
}

/** What a recording is, in figures: its calls, by kind, how many Metacontroller had in flight at most, its length. */
export interface RecordingFacts {
  file: string
  metacontroller: string
  kubernetes: string
  recordedAt: string
  objects: number
  deleted: number
  calls: number
  kinds: Partial<Record<CallKind, number>>
  maxInFlight: number
  seconds: number
}

export function recordingFacts (recording: Recording, file: string): RecordingFacts {
  const { header, calls } = recording
  const kinds: Partial<Record<CallKind, number>> = {}
  for (const kind of callKinds(calls)) kinds[kind] = (kinds[kind] ?? 0) + 1
  // Arrivals before answers at the same instant: a call answered as another arrives overlapped it.
  const events = calls.flatMap((call) => [[call.sentAt, 1], [call.answeredAt, -1]] as const).sort((a, b) => a[0] - b[0] || b[1] - a[1])
  let inFlight = 0
  let maxInFlight = 0
  for (const [, change] of events) maxInFlight = Math.max(maxInFlight, inFlight += change)
  const first = Math.min(...calls.map((call) => call.sentAt))
  const last = Math.max(...calls.map((call) => call.answeredAt))
  return {
    file,
    metacontroller: header.metacontroller,
    kubernetes: header.kubernetes,
    recordedAt: header.recordedAt,
    objects: header.objects,
    deleted: header.deleted,
    calls: calls.length,
    kinds,
    maxInFlight,
    seconds: calls.length === 0 ? 0 : (last - first) / 1000
  }
}

/** A PostgresWriter row: its table and the columns the hook writes. */
export interface WriterRow {
  table: string
  id: string
  name: string
  age: number
  country: string
}

/** The Ready condition of an answer's status, and whether it finalized. */
export function answerOutcome (answer: string): { ready?: string, reason?: string, finalized?: boolean } {
  const parsed = JSON.parse(answer) as { status?: { conditions?: Array<{ type: string, status: string, reason: string }> }, finalized?: boolean }
  const ready = parsed.status?.conditions?.find((condition) => condition.type === 'Ready')
  return { ready: ready?.status, reason: ready?.reason, finalized: parsed.finalized }
}

/**
 * The rows a PostgresWriter recording leaves, sorted by id: for each object, the row of its last sync answered Ready,
 * unless a finalize answered `finalized` after it.
 */
export function expectedWriterRows (calls: ReadonlyArray<Pick<RecordedCall, 'path' | 'body' | 'status' | 'answer'>>): WriterRow[] {
  const rows = new Map<string, WriterRow>()
  for (const call of calls) {
    if (call.status !== 200) continue
    const { key, object } = callObject(call)
    const outcome = answerOutcome(call.answer)
    if (call.path.endsWith('/finalize')) {
      if (outcome.finalized === true) rows.delete(key)
    } else if (outcome.ready === 'True') {
      const { table, name, age, country } = object.spec as { table: string, name: string, age: number, country: string }
      rows.set(key, { table, id: key, name, age, country })
    }
  }
  return [...rows.values()].sort((a, b) => a.id.localeCompare(b.id))
}
