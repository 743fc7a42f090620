import { deepStrictEqual } from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { arch, cpus, release, totalmem, type as osType } from 'node:os'
import { join, relative } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { loadConfig } from '../hooks/runtime/config.js'
import { commandArguments } from '../dev/command.js'
import { startPostgres } from '../dev/postgres-process.js'
import { startServer as startServerProcess } from '../dev/server-process.js'
import { deployment } from '../dev/deployment.js'
import { startWireCounter } from '../dev/pg-wire-count.js'
import { expectedWriterRows, readRecording, recordingFacts } from '../dev/hook-recording.js'
import { httpLoad, measurement, pacedLoad, poolLoad, type HttpLoad, type Length, type Sample } from './load.js'
import { answerAsExpected, BURST_FILE, callsOfPass, REPLAY_CONCURRENCY, replay, writerRowsFound, type ReplayCall, type Replayed } from './replay.js'
import { benchmarkCharts, benchmarkPage, createCostLines, FIXED_COST_CASE, REPLAY_CASE, serverCommand, table, targetLines, targets, type CreateCosts, type Reference, type ReplaySummary, type RequestBody, type Results, type Row, type SideName } from './report.js'
import { compositeCases, fixedCostRequest, postgresWriterCreate, postgresWriterResync, requestBody, type CompositeCase } from './requests.js'

/**
 * `npm run bench`: this server built into dist/ (`npm run build`), in its own process, started as the Deployment
 * starts it (the Node.js flags of its command), next to peers that compute the same answers in processes of their own (bench/peers/),
 * against a real PostgreSQL; autocannon at concurrency 1, 5 and 16; the sides of a case alternate in one run.
 * BENCH_DURATION (seconds per side and concurrency, default 5), BENCH_CASES (a regular expression on case names),
 * BENCH_CPU_PROF (a folder: this server runs with `node --cpu-prof` and writes its profile there on exit).
 */

// One sync at a time; Metacontroller's default of 5 workers; a burst of 16.
const CONCURRENCY = [1, 5, 16]
/** The fixed cost's pace, and the connections its calls may take (Metacontroller's 5 workers). */
const FIXED_COST_RATE = 1000
const FIXED_COST_CONNECTIONS = 5
/**
 * Seconds at that pace before the fixed cost is measured, after the unpaced warm-up: paced calls still cost more in a
 * process's first seconds of them (this server's CPU a call, second by second: 290, 250, 210, then 170-190 µs).
 */
const FIXED_COST_WARMUP_SECONDS = 4
/**
 * The fixed cost's length, in multiples of BENCH_DURATION: a ratio of two small CPU times needs many slices to settle.
 * The same code measured 1.14-1.37x in eight runs of 5 s a side, and 1.29x (1.286-1.294) in three of 40 s.
 */
const FIXED_COST_LENGTH = 8
// PostgreSQL's PGSTAT_IDLE_INTERVAL (10 s), plus a margin: see rowWrites().
const STATS_FLUSH_MS = 11_000
const root = join(import.meta.dirname, '..')

commandArguments({
  usage: `usage: npm run bench
  Builds dist/, then measures this server beside its peers against a real PostgreSQL, and writes docs/benchmarks.md
  and its charts. BENCH_DURATION: seconds per side and concurrency (default 5); BENCH_CASES: a regular expression on
  the case names; BENCH_CPU_PROF: a folder for this server's CPU profile.`,
  options: {}
})
execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, stdio: 'inherit' })

const seconds = Number(process.env.BENCH_DURATION ?? 5)
if (!(seconds > 0)) throw new Error(`BENCH_DURATION=${process.env.BENCH_DURATION}: expected a number of seconds above 0`)
const fixedCostSeconds = seconds * FIXED_COST_LENGTH
/**
 * Sets of processes each case runs on, one set after another, the figures of each side pooled over its processes: one
 * process's figure moves from run to run by more than the targets' margins (the naive hook's CPU a replayed call in
 * six runs of one session: 0.13-0.17 ms; the fixed cost's ratio in two runs of the same code: 1.39 and 1.45).
 */
const PROCESS_SETS = 3
/**
 * A warm-up's connections and length: as fast as the side answers at concurrency 5, for three seconds, or one request
 * of a multi-megabyte body (autocannon refuses more connections than requests). A process just started spends its
 * first calls compiling: this server's CPU a 1-pod call, over a fresh process's first calls, 519 µs in the first
 * thousand, 216 at 4,000, steady at 145-160 from 10,000 (about 2.5 s); the fastify peer's 277, then steady from 10,000.
 * With a second, pooling three fresh processes measured them half cold: 0.44 against 0.27 ms.
 */
const warmUp = (large: boolean): [number, Length] => large ? [1, { requests: 1 }] : [5, { seconds: Math.min(3, seconds) }]
/** A stretch of the other kind of request for each of this server's processes, before its own warm-up. */
const otherKindSeconds = Math.min(1, seconds)
const casePattern = new RegExp(process.env.BENCH_CASES ?? '', 'i')
const selected = (name: string): boolean => casePattern.test(name)

const log = (line: string): void => { process.stdout.write(`${line}\n`) }

/**
 * Where each process runs. With two CPUs or more, every measured side runs alone on the last CPU (one side is under
 * load at a time), and this process (autocannon, the pg loop) with the PostgreSQL it starts on the others: a side's
 * CPU time per request then depends on its own work, not on what the scheduler put beside it. Unpinned, the same
 * build measured twice in a row differed by up to 12 % in one session, and pinned by 1-3 % in that session; between
 * sessions on this shared machine, pinned runs still differ by up to 15-30 %, so sides are compared within one run.
 */
const cpuCount = cpus().length
const placement = cpuCount >= 2 ? { sides: String(cpuCount - 1), load: cpuCount === 2 ? '0' : `0-${cpuCount - 2}` } : undefined

function pin (pid: number, cpuList: string): void {
  // -a: every thread of the process (V8's and libuv's too); threads started later inherit it.
  execFileSync('taskset', ['-a', '-c', '-p', cpuList, String(pid)], { stdio: 'ignore' })
}
if (placement !== undefined) pin(process.pid, placement.load)

/** A server process the bench measures: CPU time and peak RSS from /proc. */
interface MeasuredProcess {
  name: string
  url: string
  /** Runs `work` and returns the process's peak RSS (MiB) and CPU time (ms) during it. */
  measured: <T>(work: () => Promise<T>) => Promise<[T, number, number]>
  wholeRunPeakRssMiB: () => number
  /** Its peak RSS once started and listening, before its first request. */
  readyRssMiB: number
  /** Resolves once the process answers at once again (a run's cut-off connections may leave it work). */
  idle: () => Promise<void>
  stop: () => Promise<void>
}

async function startProcess (name: string, entry: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<MeasuredProcess> {
  // stdout (one log line per hook call for this server, as in production) is dropped. No side opens a probe port
  // (probePort 0): health is asked on the hook port.
  const server = await startServerProcess({ entry, nodeArgs, env, probePort: 0, output: 'discard' })
  if (placement !== undefined) pin(server.pid, placement.sides)
  const { url } = server
  // Every reset first reads the peak since the last one, so the whole run's peak covers warm-ups and pauses too.
  let wholeRunPeak = 0
  const readPeak = (): number => {
    const peak = server.peakRssMiB()
    wholeRunPeak = Math.max(wholeRunPeak, peak)
    return peak
  }
  const readyRssMiB = readPeak()
  return {
    name,
    url,
    readyRssMiB,
    measured: async (work) => {
      readPeak()
      server.resetPeakRss()
      const cpuBefore = server.cpuMs()
      const result = await work()
      return [result, readPeak(), server.cpuMs() - cpuBefore]
    },
    wholeRunPeakRssMiB: () => {
      readPeak()
      return wholeRunPeak
    },
    idle: async () => {
      for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(50)) {
        const sent = performance.now()
        await fetch(`${url}/healthz`)
        if (performance.now() - sent < 20) return
      }
      throw new Error(`${name} stayed busy for 2 minutes after a run`)
    },
    stop: async () => { await server.stop() }
  }
}

/** This server as the Deployment runs it: the runtime's environment and Node.js's flags, then `env` and `nodeArgs`. */
async function startDeployed (name: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<MeasuredProcess> {
  return await startProcess(name, manifest.script, { ...manifest.runtimeEnv, ...env }, [...manifest.nodeArgs, ...nodeArgs])
}

interface Answer { status: number, etag: string | null, text: string }

async function post (url: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  return { status: response.status, etag: response.headers.get('etag'), text: await response.text() }
}

const rowWritten = (body: string): boolean => body.includes('"reason":"RowWritten"')

/**
 * The statements with which the row writes (hooks/postgres-writer/rows.ts) write a row, parameters id, name, age, country:
 * the upsert of a new object (inside its placement transaction), and the in-place update of an object whose status
 * says where its row is (a resync).
 */
const rowStatements = {
  upsert: (schema: string, table: string): string =>
    `INSERT INTO "${schema}"."${table}" AS t (id, name, age, country) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country
       WHERE (t.name, t.age, t.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)`,
  updateInPlace: (schema: string, table: string): string =>
    `WITH changed AS (
         UPDATE "${schema}"."${table}" AS t SET name = $2, age = $3, country = $4
         WHERE id = $1 AND (t.name, t.age, t.country) IS DISTINCT FROM ($2::text, $3::integer, $4::text)
       )
       SELECT EXISTS (SELECT 1 FROM "${schema}"."${table}" WHERE id = $1) AS present`
}

/**
 * Rows inserted, updated or deleted in a table, from pg_stat_user_tables. A backend publishes its counts at most once
 * a second while busy, and an idle one only after PGSTAT_IDLE_INTERVAL (10 s); pg_stat_force_next_flush() only
 * flushes the backend that calls it, not the hook server's pooled connections. So a reading is final only once
 * every backend that wrote has been idle for STATS_FLUSH_MS.
 */
async function rowWrites (pool: pg.Pool, schema: string, table: string): Promise<number> {
  const result = await pool.query<{ writes: string }>(
    'SELECT n_tup_ins + n_tup_upd + n_tup_del AS writes FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
    [schema, table]
  )
  return Number(result.rows[0]?.writes ?? 0)
}

/**
 * One side of a case: a hook server (this one, with or without its ETag, or a peer) with the requests it is sent,
 * or the pg loop.
 */
interface Side {
  name: SideName
  process: MeasuredProcess | undefined
  load?: HttpLoad
  run: (concurrency: number, length: Length) => Promise<Sample>
  /** Its own warm-up, after the one every side gets. */
  ownWarmUp?: () => Promise<unknown>
}

const onProcess = (name: SideName, process: MeasuredProcess, request: Omit<HttpLoad, 'url'>): Side => {
  const load = { ...request, url: process.url }
  return { name, process, load, run: async (concurrency, length) => await httpLoad(load, concurrency, length) }
}

const started = Date.now()
let databaseUrl = process.env.DATABASE_URL ?? ''
let stopDatabase = async (): Promise<void> => {}
if (databaseUrl === '') {
  // Durable, as PostgreSQL is by default and in production: with fsync off, as the tests run it, the naive hook's
  // write on every sync costs no flush. In one session its resyncs came out 1.1-3.6x faster that way; this server's,
  // which write nothing, moved within the runs' spread.
  const postgres = await startPostgres({ durable: true })
  databaseUrl = postgres.connectionString
  stopDatabase = postgres.remove
}

// Schemas of this run's own, dropped at the end, so that DATABASE_URL may point at a database in use. The naive
// hook writes in a schema of its own, so that the row writes counted for this server's resyncs are its own.
const schema = `bench_${randomBytes(4).toString('hex')}`
const naiveSchema = `${schema}_naive`
const databaseEnv = { DATABASE_URL: databaseUrl, HOST: '127.0.0.1' }
const config = loadConfig({ ...process.env, ...databaseEnv, PG_SCHEMA: schema })
const admin = new pg.Pool({ connectionString: databaseUrl, max: 2 })
// The pg loop's pool: the same size as the hook server's.
const loopPool = new pg.Pool({ connectionString: databaseUrl, max: config.database.poolMax })
// Stopping the embedded database can reach a connection that is still closing; that is no failure of the run.
for (const pool of [admin, loopPool]) pool.on('error', () => {})
const rows: Row[] = []
const bodies: Record<string, RequestBody> = {}
const failures: string[] = []
const resync = { rowWrites: 0, hookRequests: 0, loopQueries: 0 }
let createCosts: CreateCosts | null = null
let replaySummary: ReplaySummary | null = null

/** What a side's slices add up to at one concurrency. */
interface SideRecord {
  samples: Sample[]
  peakRssMiB: number | null
  cpuMs: number
  /** The bench's own CPU time (autocannon, the pg loop) and the time it ran, over the side's slices. */
  loadCpuMs: number
  loadMs: number
}

const newSideRecord = (): SideRecord => ({ samples: [], peakRssMiB: null, cpuMs: 0, loadCpuMs: 0, loadMs: 0 })

/** Runs `work`, adding this process's CPU time and the time it took to `record`. */
async function drivenBy<T> (record: SideRecord, work: () => Promise<T>): Promise<T> {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const result = await work()
  const used = process.cpuUsage(cpu)
  record.loadCpuMs += (used.user + used.system) / 1000
  record.loadMs += performance.now() - started
  return result
}

/**
 * Measures the sides of a case on one of its process sets, at every concurrency, adding to what its earlier sets
 * measured. They alternate in slices of about a second, so that each sees the same share of a busy machine,
 * BENCH_DURATION's worth over the sets. A multi-megabyte body (`large`) runs in one slice per side and set; over the
 * sets, twice as many requests as connections (at least 8), all answered: a cut-off slice would leave CPU time spent
 * on requests it never counts. With 4 at concurrency 1, this server's 2,000-pod figure ranged from 100 to 153 ms a
 * request over four runs (the fastify peer's 125-130); with 8, from 103 to 108 over three. A side answered 304 gets
 * ten times as many: each costs about a tenth, so that its CPU time is taken over as much work as the others'.
 */
async function compare (name: string, sides: Side[], { large = false, reference, levels = CONCURRENCY, perSide = seconds }: { large?: boolean, reference?: Reference, levels?: number[], perSide?: number } = {}): Promise<void> {
  const slices = large ? 1 : Math.max(1, Math.round(perSide / PROCESS_SETS))
  const length = (side: Side, concurrency: number): Length => large
    ? { requests: Math.max(concurrency, Math.ceil(Math.max(8, 2 * concurrency) / PROCESS_SETS)) * (side.load?.status === 304 ? 10 : 1) }
    : { seconds: perSide / (slices * PROCESS_SETS) }
  for (const { name: side, process, load } of sides) {
    if (process !== undefined && load !== undefined && await answerOf(name, process, load, side) === undefined) return
  }
  for (const side of sides) {
    await side.process?.idle()
    // Unpaced, the fixed cost's side included: the warm-up is counted in calls, not time.
    if (side.load === undefined) await side.run(...warmUp(large))
    else await httpLoad(side.load, ...warmUp(large))
    await side.ownWarmUp?.()
  }
  const set = (setsMeasured.get(name) ?? 0) + 1
  setsMeasured.set(name, set)
  for (const concurrency of levels) {
    const records = sides.map((side) => pooledRecord(name, side.name, concurrency))
    for (let slice = 0; slice < slices; slice++) {
      for (const [index, side] of sides.entries()) {
        const record = records[index] as SideRecord
        const run = async (): Promise<Sample> => await drivenBy(record, async () => await side.run(concurrency, length(side, concurrency)))
        if (side.process === undefined) {
          record.samples.push(await run())
          continue
        }
        await side.process.idle()
        const [sample, peak, cpu] = await side.process.measured(run)
        record.samples.push(sample)
        record.peakRssMiB = Math.max(record.peakRssMiB ?? 0, peak)
        record.cpuMs += cpu
      }
    }
    const level = sides.map((side, index): Row => {
      const record = records[index] as SideRecord
      const measured = measurement(record.samples)
      return {
        case: name,
        side: side.name,
        concurrency,
        ...measured,
        peakRssMiB: record.peakRssMiB,
        serverCpuMsPerRequest: side.process === undefined || measured.requests === 0 ? null : record.cpuMs / measured.requests,
        loadCpuShare: record.loadMs === 0 ? null : record.loadCpuMs / record.loadMs,
        reference: null,
        failed: measured.unexpectedStatus > 0 || measured.errors > 0
      }
    })
    const compared: SideName[] = reference === 'peers' ? ['fastify peer', 'node:http peer'] : reference === undefined ? [] : [reference]
    const referenced = level.some((row) => compared.includes(row.side))
    for (const row of level) {
      if (referenced && row.side.startsWith('ours')) row.reference = reference ?? null
      progress(row, set)
      const index = rows.findIndex((earlier) => earlier.case === row.case && earlier.side === row.side && earlier.concurrency === row.concurrency)
      if (index === -1) rows.push(row)
      else rows[index] = row
    }
  }
}

/** Each side's record of a case at one concurrency, pooled over the case's process sets; the sets measured per case. */
const pooledRecords = new Map<string, SideRecord>()
const setsMeasured = new Map<string, number>()
function pooledRecord (name: string, side: SideName, concurrency: number): SideRecord {
  const key = JSON.stringify([name, side, concurrency])
  const record = pooledRecords.get(key) ?? newSideRecord()
  pooledRecords.set(key, record)
  return record
}

/** A row's figures as measured so far: `set`, when its case has measured that many of its process sets. */
function progress (row: Row, set?: number): void {
  log(`  ${row.case}, ${row.side} @${row.concurrency}${set === undefined ? '' : ` (${set} of ${PROCESS_SETS} process sets)`}: ${row.requestsPerSecond.toFixed(1)} req/s, p99 ${row.p99Ms.toFixed(2)} ms, ` +
    `${row.serverCpuMsPerRequest?.toFixed(3) ?? '–'} CPU ms/req, ${row.peakRssMiB?.toFixed(0) ?? '–'} MiB` +
    `${row.failed ? `, FAILED (${row.unexpectedStatus} unexpected status, ${row.errors} errors)` : ''}`)
}

/**
 * Sends one of `request`'s requests once `process` is idle: its answer, when it has the request's status and passes
 * its check; otherwise undefined, and the case's failure is recorded, in the name of `side`.
 */
async function answerOf (name: string, process: MeasuredProcess, request: Omit<HttpLoad, 'url'>, side: string = process.name): Promise<Answer | undefined> {
  await process.idle()
  const answer = await post(`${process.url}${request.path}`, typeof request.body === 'string' ? request.body : request.body(), request.headers)
  if (answer.status === (request.status ?? 200) && (request.verifyBody?.(answer.text) ?? true)) return answer
  failures.push(`${name}: ${side} ${request.path} answered ${answer.status}: ${answer.text.slice(0, 500)}`)
  return undefined
}

/**
 * Whether a peer gives the very answer this server gave (`answer`), as it must, or the comparison would be of
 * different work; otherwise the case's failure is recorded.
 */
async function answersAlike (name: string, peer: MeasuredProcess, request: Omit<HttpLoad, 'url'>, answer: Answer): Promise<boolean> {
  const peerAnswer = await answerOf(name, peer, request)
  if (peerAnswer === undefined) return false
  try {
    deepStrictEqual(JSON.parse(peerAnswer.text), JSON.parse(answer.text))
    return true
  } catch {
    failures.push(`${name}: ${peer.name} answered differently from this server`)
    return false
  }
}

const pgLoop = (query: () => [string, unknown[]]): Side => ({
  name: 'pg loop',
  process: undefined,
  run: async (concurrency, length) => await poolLoad(loopPool, query, concurrency, 'seconds' in length ? length.seconds : seconds)
})
const profileDir = process.env.BENCH_CPU_PROF
const profile = profileDir === undefined || profileDir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
const manifest = deployment()

/** Creates sent one at a time to count what each costs in PostgreSQL, after as many to warm up. */
const COUNTED_CREATES = 100

/**
 * What one create costs in PostgreSQL, for this server and the naive hook: each on a process of its own whose database
 * is a proxy that counts round trips and statements from the protocol (dev/pg-wire-count.ts), in a schema of its own.
 * The warm-up creates the tables and prepares the statements; then creates are sent one at a time.
 */
async function countCreates (): Promise<CreateCosts | null> {
  const counted: Partial<CreateCosts> = {}
  for (const [side, name] of [['ours', 'ours'], ['naiveHook', 'fastify peer']] as const) {
    const counter = await startWireCounter(databaseUrl)
    const countedSchema = `${side === 'ours' ? schema : naiveSchema}_counted`
    const server = name === 'ours'
      ? await startDeployed(name, { ...databaseEnv, DATABASE_URL: counter.connectionString, PG_SCHEMA: countedSchema })
      : await startProcess(name, 'bench/peers/fastify-hook.js', { ...databaseEnv, DATABASE_URL: counter.connectionString, PG_SCHEMA: countedSchema })
    try {
      const { next } = postgresWriterCreate()
      const send = async (): Promise<boolean> => rowWritten((await post(`${server.url}/postgres-writer/sync`, next())).text)
      for (let i = 0; i < COUNTED_CREATES; i++) await send()
      const before = counter.counts()
      let written = 0
      for (let i = 0; i < COUNTED_CREATES; i++) if (await send()) written++
      const after = counter.counts()
      if (written < COUNTED_CREATES) {
        failures.push(`PostgresWriter create: ${name} wrote ${written} of ${COUNTED_CREATES} rows while its statements were counted`)
        return null
      }
      counted[side] = { roundTrips: (after.roundTrips - before.roundTrips) / COUNTED_CREATES, statements: (after.statements - before.statements) / COUNTED_CREATES }
    } finally {
      await server.stop()
      await counter.close()
      await admin.query(`DROP SCHEMA IF EXISTS "${countedSchema}" CASCADE`)
    }
  }
  return counted as CreateCosts
}

/**
 * Passes of the recording per side after the warm-up: the same share of BENCH_DURATION as the other cases take, a
 * warm pass taking under half a second.
 */
const replayPasses = Math.max(1, Math.round(seconds / 1.25))
/**
 * Passes that warm a process up before the measured ones: a process spends its first passes compiling the code they
 * reach, and only the sixth costs what a server that has run for a while does (this server's CPU a call, pass by
 * pass: 648, 416, 263, 208, 232, 183, 183 µs; the naive hook's 440, 239, 177, 147, 147, 135, 141).
 */
const REPLAY_WARMUP_PASSES = 5

/**
 * The burst recorded from a real Metacontroller, replayed on this server and on the naive hook, each in a schema of its
 * own (bench/replay.ts), on PROCESS_SETS processes one after another: REPLAY_WARMUP_PASSES times on each to warm
 * it up (the first of them measured alone, as a process just started pays it), then `replayPasses` times, the sides
 * taking turns, each pass about objects of its own. Every answer is checked, and so are the rows each pass left.
 */
async function replayBurst (): Promise<ReplaySummary | null> {
  const recording = await readRecording(BURST_FILE).catch((error: NodeJS.ErrnoException) => {
    failures.push(`${REPLAY_CASE}: cannot read ${relative(root, BURST_FILE)} (${error.code ?? error.message}): record it with \`npm run bench:record\``)
    return undefined
  })
  if (recording === undefined) return null
  const schemas = { ours: `${schema}_replay`, naive: `${naiveSchema}_replay` }
  const passesPerProcess = REPLAY_WARMUP_PASSES + replayPasses
  const passes = Array.from({ length: PROCESS_SETS * passesPerProcess }, (_, pass) => callsOfPass(recording.calls, pass + 1))
  const checks: ReplaySummary['checks'] = {}
  const sides = [
    { name: 'ours' as const, schema: schemas.ours, differing: 0, firstPassCpuMs: 0, record: newSideRecord() },
    { name: 'naive hook' as const, schema: schemas.naive, differing: 0, firstPassCpuMs: 0, record: newSideRecord() }
  ]
  try {
    await onProcessSets(['ours', 'fastify peer'], async ({ ours, 'fastify peer': naive }, set) => {
      const processes = { ours, 'naive hook': naive }
      for (const [pass, calls] of passes.slice(set * passesPerProcess, (set + 1) * passesPerProcess).entries()) {
        for (const side of sides) {
          const process = processes[side.name]
          await process.idle()
          const run = async (): Promise<Replayed> => await replay(process.url, calls, REPLAY_CONCURRENCY)
          const differing = ({ answers }: Replayed): number => answers.filter((answer, index) => !answerAsExpected(calls[index] as ReplayCall, answer, side.name)).length
          // The warm-up passes are checked; of them, only each process's first one's CPU is kept, for the page.
          if (pass < REPLAY_WARMUP_PASSES) {
            const [replayed, , cpu] = await process.measured(run)
            side.differing += differing(replayed)
            if (pass === 0) side.firstPassCpuMs += cpu
            continue
          }
          const [replayed, peak, cpu] = await process.measured(async () => await drivenBy(side.record, run))
          side.differing += differing(replayed)
          side.record.samples.push(replayed.sample)
          side.record.peakRssMiB = Math.max(side.record.peakRssMiB ?? 0, peak)
          side.record.cpuMs += cpu
        }
      }
    }, schemas)
    for (const side of sides) {
      const expected = passes.flatMap((calls) => expectedWriterRows(calls))
      const found = (await Promise.all(passes.map(async (calls) => await writerRowsFound(admin, side.schema, calls)))).flat()
      const rowsMatched = JSON.stringify(found) === JSON.stringify(expected)
      checks[side.name] = { answersDiffering: side.differing, rowsExpected: expected.length, rowsFound: found.length, rowsMatched }
      if (side.differing > 0) failures.push(`${REPLAY_CASE}: ${side.differing} of ${passes.length * recording.calls.length} answers of ${side.name} differed from what the recording says`)
      if (!rowsMatched) failures.push(`${REPLAY_CASE}: ${side.name} left ${found.length} rows where the recording leaves ${expected.length}, or not the same`)
      const measured = measurement(side.record.samples)
      const row: Row = {
        case: REPLAY_CASE,
        side: side.name,
        concurrency: REPLAY_CONCURRENCY,
        ...measured,
        peakRssMiB: side.record.peakRssMiB,
        serverCpuMsPerRequest: measured.requests === 0 ? null : side.record.cpuMs / measured.requests,
        loadCpuShare: side.record.loadMs === 0 ? null : side.record.loadCpuMs / side.record.loadMs,
        reference: side.name === 'ours' ? 'naive hook' : null,
        failed: measured.unexpectedStatus > 0 || measured.errors > 0
      }
      progress(row)
      rows.push(row)
    }
  } finally {
    for (const replaySchema of Object.values(schemas)) await admin.query(`DROP SCHEMA IF EXISTS "${replaySchema}" CASCADE`)
  }
  const firstPassCpuMsPerCall = Object.fromEntries(sides.map((side) => [side.name, side.firstPassCpuMs / (PROCESS_SETS * recording.calls.length)]))
  return { recording: recordingFacts(recording, relative(root, BURST_FILE)), concurrency: REPLAY_CONCURRENCY, processes: PROCESS_SETS, warmupPasses: REPLAY_WARMUP_PASSES, passes: replayPasses, firstPassCpuMsPerCall, checks }
}

const wholeRunPeakRssMiB: Record<string, number> = {}
const readyRssMiB: Record<string, number> = {}
let resyncEnded: number | undefined
let resyncBefore = 0
let resyncTable = ''

type ProcessName = 'ours' | 'ours, ETag' | 'fastify peer' | 'node:http peer' | 'receive floor'
/** The schemas the processes of a case write in: this server's, and the naive hook's. */
interface Schemas { ours: string, naive: string }
const startSide: Record<ProcessName, (schemas: Schemas) => Promise<MeasuredProcess>> = {
  ours: async ({ ours }) => await startDeployed('ours', { ...databaseEnv, PG_SCHEMA: ours }, profile),
  'ours, ETag': async ({ ours }) => await startDeployed('ours, ETag', { ...databaseEnv, PG_SCHEMA: ours }, profile),
  'fastify peer': async ({ naive }) => await startProcess('fastify peer', 'bench/peers/fastify-hook.js', { ...databaseEnv, PG_SCHEMA: naive, PG_POOL_MAX: String(config.database.poolMax) }),
  'node:http peer': async () => await startProcess('node:http peer', 'bench/peers/http-hook.js', {}),
  'receive floor': async () => await startProcess('receive floor', 'bench/peers/receive-floor.js', {})
}
const running = new Set<MeasuredProcess>()

/**
 * Runs a case on PROCESS_SETS sets of fresh processes (see onFreshProcesses), until a set records a failure; `measure`
 * is told which set it runs on, from 0.
 */
async function onProcessSets (names: readonly ProcessName[], measure: (sides: Record<ProcessName, MeasuredProcess>, set: number) => Promise<void>, schemas?: Schemas): Promise<void> {
  const failed = failures.length
  for (let set = 0; set < PROCESS_SETS && failures.length === failed; set++) await onFreshProcesses(names, async (sides) => { await measure(sides, set) }, schemas)
}

/**
 * Runs a case on processes started for it alone, so that no case's heap, garbage or compiled code counts in another's
 * CPU time or peak RSS. This server's ETag side is a process of its own: in the process that answers the changed
 * requests, the garbage they left was collected while the 304s ran, and counted as theirs.
 */
async function onFreshProcesses (names: readonly ProcessName[], measure: (sides: Record<ProcessName, MeasuredProcess>) => Promise<void>, schemas: Schemas = { ours: schema, naive: naiveSchema }): Promise<void> {
  const started = await Promise.all(names.map(async (name) => await startSide[name](schemas)))
  for (const side of started) running.add(side)
  try {
    await measure(Object.fromEntries(started.map((side) => [side.name, side])) as Record<ProcessName, MeasuredProcess>)
  } finally {
    for (const side of started) {
      wholeRunPeakRssMiB[side.name] = Math.max(wholeRunPeakRssMiB[side.name] ?? 0, side.wholeRunPeakRssMiB())
      readyRssMiB[side.name] = Math.max(readyRssMiB[side.name] ?? 0, side.readyRssMiB)
      running.delete(side)
    }
    await Promise.all(started.map(async (side) => { await side.stop() }))
  }
}

let postgresFsync = ''
try {
  postgresFsync = (await admin.query<{ fsync: string }>('SHOW fsync')).rows[0]?.fsync ?? ''
  log(`bench: ${seconds} s per side and concurrency over ${PROCESS_SETS} process sets, concurrency ${CONCURRENCY.join('/')}, pool ${config.database.poolMax}, ` +
    `PostgreSQL with fsync ${postgresFsync}, ` +
    `this server as the Deployment runs it, \`${serverCommand(manifest)}\` (limit ${manifest.memoryLimitMiB} MiB), ` +
    (placement === undefined ? 'unpinned (one CPU)' : `sides on CPU ${placement.sides}, load and PostgreSQL on CPU ${placement.load}`) +
    ', each case on processes of its own')

  if (selected(FIXED_COST_CASE)) {
    await onProcessSets(['ours', 'fastify peer'], async ({ ours, 'fastify peer': bareFastify }) => {
      const body = fixedCostRequest()
      bodies[FIXED_COST_CASE] = requestBody(body)
      const path = '/podset/sync'
      const answer = await answerOf(FIXED_COST_CASE, ours, { path, body })
      if (answer === undefined || !await answersAlike(FIXED_COST_CASE, bareFastify, { path, body }, answer)) return
      const paced = (name: SideName, process: MeasuredProcess): Side => {
        const load = { path, body, url: process.url }
        const run = async (connections: number, length: Length): Promise<Sample> => await pacedLoad(load, FIXED_COST_RATE, connections, 'seconds' in length ? length.seconds : seconds)
        return { name, process, load, run, ownWarmUp: async () => await run(FIXED_COST_CONNECTIONS, { seconds: FIXED_COST_WARMUP_SECONDS }) }
      }
      await compare(FIXED_COST_CASE, [paced('ours', ours), paced('fastify peer', bareFastify)], { reference: 'fastify peer', levels: [FIXED_COST_CONNECTIONS], perSide: fixedCostSeconds })
    })
  }

  const resyncName = 'PostgresWriter unchanged resync'
  if (selected(resyncName)) {
    const request = postgresWriterResync()
    await onProcessSets(['ours', 'fastify peer'], async ({ ours, 'fastify peer': fastifyPeer }) => {
      resyncTable = request.object.spec.table
      const path = '/postgres-writer/sync'
      // The first sync writes the row (on the first set; the later ones find it written); its answer is the status
      // that every later, unchanged resync observes.
      const first = await answerOf(resyncName, ours, { path, body: JSON.stringify(request), verifyBody: rowWritten })
      if (first !== undefined) {
        request.object.status = (JSON.parse(first.text) as { status: unknown }).status
        const body = JSON.stringify(request)
        bodies[resyncName] = requestBody(body)
        // In this run's fresh schema, the first non-zero count is that first sync's insert, once published.
        for (const deadline = Date.now() + STATS_FLUSH_MS + 5000; resyncBefore === 0 && Date.now() < deadline; await sleep(200)) {
          resyncBefore = await rowWrites(admin, schema, resyncTable)
        }
        const { namespace, name } = request.object.metadata
        const { name: person, age, country } = request.object.spec
        const sql = rowStatements.updateInPlace(schema, resyncTable)
        const query = (): [string, unknown[]] => { resync.loopQueries++; return [sql, [`${namespace}/${name}`, person, age, country]] }
        await compare(resyncName, [
          onProcess('ours', ours, { path, body, verifyBody: rowWritten }),
          onProcess('naive hook', fastifyPeer, { path, body, verifyBody: rowWritten }),
          pgLoop(query)
        ], { reference: 'naive hook' })
        resyncEnded = Date.now()
        resync.hookRequests = rows.filter((row) => row.case === resyncName && row.side === 'ours').reduce((sum, row) => sum + row.requests, 0)
      }
    })
  }

  const composites = compositeCases().filter((c) => selected(c.name))
  const measureComposite = async (composite: CompositeCase): Promise<void> => await onProcessSets(
    ['ours', 'ours, ETag', ...composite.peers ? ['fastify peer', 'node:http peer', 'receive floor'] as const : []],
    async ({ ours, 'ours, ETag': oursEtag, 'fastify peer': fastifyPeer, 'node:http peer': httpPeer, 'receive floor': receiveFloor }) => {
      const body = composite.body()
      bodies[composite.name] = requestBody(body)
      const { path } = composite
      const answer = await answerOf(composite.name, ours, { path, body })
      if (answer === undefined) return
      const sides = [onProcess('ours', ours, { path, body })]
      // An answer without an ETag (a server built before the ETag support) leaves the ETag targets not measured.
      const notModified = answer.etag === null ? undefined : { path, body, headers: { 'if-none-match': answer.etag }, status: 304 }
      if (notModified !== undefined) {
        sides.push(onProcess('ours, ETag', oursEtag, notModified))
        // A server in production answers both kinds: each of this server's two processes first answers the kind it is
        // not measured on, and then warms up on its own, so that neither is measured in a state no server is in (in one
        // session, a process that had only ever parsed answered changed 10-pod requests at 0.47 ms of CPU, and at
        // 0.34 ms after a stretch of 304s; a later lab run did not show it).
        const [connections, other]: [number, Length] = composite.large ? warmUp(true) : [5, { seconds: otherKindSeconds }]
        await httpLoad({ ...notModified, url: ours.url }, connections, other)
        await httpLoad({ path, body, url: oursEtag.url }, connections, other)
      }
      if (composite.peers) {
        for (const peer of [fastifyPeer, httpPeer]) if (!await answersAlike(composite.name, peer, { path, body }, answer)) return
        sides.push(onProcess('fastify peer', fastifyPeer, { path, body }), onProcess('node:http peer', httpPeer, { path, body }))
        if (notModified !== undefined) sides.push(onProcess('receive floor', receiveFloor, notModified))
      }
      await compare(composite.name, sides, { large: composite.large, reference: composite.peers ? 'peers' : undefined })
    })
  for (const composite of composites.filter((c) => !c.large)) await measureComposite(composite)

  if (resyncEnded !== undefined) {
    await sleep(Math.max(0, resyncEnded + STATS_FLUSH_MS - Date.now()))
    resync.rowWrites = await rowWrites(admin, schema, resyncTable) - resyncBefore
  }

  const createName = 'PostgresWriter create'
  if (selected(createName)) {
    // One name per create across the process sets: each request creates an object of its own.
    const { request, next } = postgresWriterCreate()
    bodies[createName] = requestBody(next())
    const { namespace } = request.object.metadata
    const { table: createTable, name: person, age, country } = request.object.spec
    const sql = rowStatements.upsert(schema, createTable)
    let created = 0
    const path = '/postgres-writer/sync'
    await onProcessSets(['ours', 'fastify peer'], async ({ ours, 'fastify peer': fastifyPeer }) => {
      await compare(createName, [
        onProcess('ours', ours, { path, body: next, verifyBody: rowWritten }),
        onProcess('naive hook', fastifyPeer, { path, body: next, verifyBody: rowWritten }),
        pgLoop(() => [sql, [`${namespace}/pg-loop-${created++}`, person, age, country]])
      ], { reference: 'naive hook' })
    })
    createCosts = await countCreates()
  }

  if (selected(REPLAY_CASE)) replaySummary = await replayBurst()

  for (const composite of composites.filter((c) => c.large)) await measureComposite(composite)
} finally {
  await Promise.all([...running].map(async (side) => { await side.stop() }))
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await admin.query(`DROP SCHEMA IF EXISTS "${naiveSchema}" CASCADE`)
  await Promise.all([admin.end(), loopPool.end()])
  await stopDatabase()
}

const verdicts = targets({ rows, resync, wholeRunPeakRssMiB, readyRssMiB, memoryLimitMiB: manifest.memoryLimitMiB })
const elapsedSeconds = Math.round((Date.now() - started) / 1000)

log('')
log(table(rows))
log('')
log(targetLines(verdicts))
if (createCosts !== null) log(createCostLines(createCosts))
for (const failure of failures) log(`FAILED ${failure}`)
log(`\n${rows.length} rows in ${elapsedSeconds} s; figures in bench/results.json, the page in docs/benchmarks.md`)

const results: Results = {
  date: new Date(started).toISOString(),
  machine: { cpu: cpus()[0]?.model.trim() ?? 'unknown CPU', cpus: cpuCount, memoryGiB: Math.round(totalmem() / 1024 ** 3), system: `${osType()} ${release()} ${arch()}` },
  node: process.version,
  placement: placement ?? 'unpinned (one CPU)',
  secondsPerRun: seconds,
  fixedCostSeconds: selected(FIXED_COST_CASE) ? fixedCostSeconds : undefined,
  processSets: PROCESS_SETS,
  cases: process.env.BENCH_CASES === undefined || process.env.BENCH_CASES === '' ? null : process.env.BENCH_CASES,
  concurrency: CONCURRENCY,
  poolMax: config.database.poolMax,
  postgresFsync,
  nodeArgs: manifest.nodeArgs,
  runtimeEnv: manifest.runtimeEnv,
  memoryLimitMiB: manifest.memoryLimitMiB,
  elapsedSeconds,
  bodies,
  rows,
  resync,
  createCosts,
  replay: replaySummary,
  wholeRunPeakRssMiB,
  readyRssMiB,
  targets: verdicts,
  failures
}
await writeFile(join(root, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`)
await writeFile(join(root, 'docs', 'benchmarks.md'), benchmarkPage(results))
for (const [file, svg] of Object.entries(benchmarkCharts(results))) await writeFile(join(root, 'docs', file), svg)

process.exit(failures.length > 0 || rows.some((row) => row.failed) ? 1 : 0)
