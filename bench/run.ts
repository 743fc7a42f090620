import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { loadConfig } from '../hooks/config.js'
import { freePort } from '../hooks/database/embedded.js'
import { startPostgres } from '../test/helpers/postgres-process.js'
import { startServer as startServerProcess, waitForReadiness } from '../test/helpers/server-process.js'
import { cpuMs, httpLoad, measurement, peakRss, poolLoad, type HttpLoad, type Measurement, type Sample } from './load.js'
import { table, targetLines, targets, type Kind, type Row } from './report.js'
import { compositeCases, postgresWriterCreate, postgresWriterResync, type CompositeCase } from './requests.js'

/**
 * `npm run bench` (after `npm run build`): the production server from dist/ in its own process, a real PostgreSQL,
 * autocannon at concurrency 1, 16 and 64, each case next to its baseline measured in the same run.
 * BENCH_DURATION (seconds per run, default 5), BENCH_CASES (a regular expression on case names),
 * BENCH_CPU_PROF (a folder: the server runs with `node --cpu-prof` and writes its profile there on exit).
 */

const CONCURRENCY = [1, 16, 64]
// PostgreSQL's PGSTAT_IDLE_INTERVAL (10 s), plus a margin: see rowWrites().
const STATS_FLUSH_MS = 11_000
const root = join(import.meta.dirname, '..')

const seconds = Number(process.env.BENCH_DURATION ?? 5)
if (!(seconds > 0)) throw new Error(`BENCH_DURATION=${process.env.BENCH_DURATION}: expected a number of seconds above 0`)
const warmupSeconds = Math.min(1, seconds)
const casePattern = new RegExp(process.env.BENCH_CASES ?? '', 'i')
const selected = (name: string): boolean => casePattern.test(name)

const log = (line: string): void => { process.stdout.write(`${line}\n`) }

interface HookServer {
  url: string
  /** Runs `work` and returns the server's peak RSS (MiB) and CPU time (ms) during it. */
  measured: <T>(work: () => Promise<T>) => Promise<[T, number, number]>
  /** The peak RSS from start until the server answered /readyz. */
  startupPeakRssMiB: number
  wholeRunPeakRssMiB: () => number
  /** Resolves once the server answers at once again (a run's cut-off connections may leave it work). */
  idle: () => Promise<void>
  stop: () => Promise<void>
}

async function startServer (env: NodeJS.ProcessEnv): Promise<HookServer> {
  const profileDir = process.env.BENCH_CPU_PROF
  const profile = profileDir === undefined || profileDir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
  // stdout (one log line per hook call, as in production) is dropped. bench/server.js opens no probe port (probePort 0):
  // health and readiness are asked on the hook port.
  const server = await startServerProcess({ entry: 'bench/server.js', nodeArgs: profile, env, port: Number(env.PORT), probePort: 0, output: 'discard' })
  await waitForReadiness(server, 200, 30_000)
  const { pid, url } = server

  // Every reset first reads the peak since the last one, so the whole run's peak covers warm-ups and pauses too.
  let wholeRunPeak = 0
  const readPeak = (): number => {
    const peak = peakRss.readMiB(pid)
    wholeRunPeak = Math.max(wholeRunPeak, peak)
    return peak
  }
  return {
    url,
    measured: async (work) => {
      readPeak()
      peakRss.reset(pid)
      const cpuBefore = cpuMs(pid)
      const result = await work()
      return [result, readPeak(), cpuMs(pid) - cpuBefore]
    },
    startupPeakRssMiB: readPeak(),
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
      throw new Error('the bench server stayed busy for 2 minutes after a run')
    },
    stop: async () => { await server.stop() }
  }
}

async function post (url: string, body: string): Promise<{ status: number, text: string }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  return { status: response.status, text: await response.text() }
}

const rowWritten = (body: string): boolean => body.includes('"reason":"RowWritten"')

/**
 * The statements with which RowStore (hooks/postgres-writer/rows.ts) writes a row, parameters id, name, age, country:
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

/** What the hook server used during the slices of one side. */
interface ServerUse {
  peakRssMiB: number
  cpuMs: number
}

function tableRow (name: string, kind: Kind, concurrency: number, measured: Measurement, server: ServerUse | null, baseline?: Measurement): Row {
  return {
    case: name,
    kind,
    concurrency,
    ...measured,
    peakRssMiB: server?.peakRssMiB ?? null,
    serverCpuMsPerRequest: server === null || measured.requests === 0 ? null : server.cpuMs / measured.requests,
    ratioToBaseline: baseline === undefined ? null : measured.requestsPerSecond / baseline.requestsPerSecond,
    failed: measured.non2xx > 0 || measured.errors > 0
  }
}

function progress (row: Row): void {
  log(`  ${row.case} ${row.kind} @${row.concurrency}: ${row.requestsPerSecond.toFixed(1)} req/s, p99 ${row.p99Ms.toFixed(2)} ms${row.failed ? `, FAILED (${row.non2xx} non-2xx, ${row.errors} errors)` : ''}`)
}

const started = Date.now()
let databaseUrl = process.env.DATABASE_URL ?? ''
let stopDatabase = async (): Promise<void> => {}
if (databaseUrl === '') {
  const postgres = await startPostgres()
  databaseUrl = postgres.connectionString
  stopDatabase = postgres.remove
}

// A schema of this run's own, dropped at the end, so that DATABASE_URL may point at a database in use.
const schema = `bench_${randomBytes(4).toString('hex')}`
const serverEnv: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, PG_SCHEMA: schema, HOST: '127.0.0.1', PORT: String(await freePort()) }
const config = loadConfig(serverEnv)
const admin = new pg.Pool({ connectionString: databaseUrl, max: 2 })
// The pg loop's pool: the same size as the hook server's.
const loopPool = new pg.Pool({ connectionString: databaseUrl, max: config.database.poolMax })
// Stopping the embedded database can reach a connection that is still closing; that is no failure of the run.
for (const pool of [admin, loopPool]) pool.on('error', () => {})
const rows: Row[] = []
const failures: string[] = []
const resync = { rowWrites: 0, hookRequests: 0, loopQueries: 0 }

/** One side of a comparison: a stretch of load at a concurrency, on the hook server or straight on the database. */
interface Side {
  kind: Kind
  onServer: boolean
  run: (concurrency: number, seconds: number) => Promise<Sample>
}

interface SideRecord {
  samples: Sample[]
  server: ServerUse | null
}

const onServer = (kind: Kind, load: HttpLoad): Side => ({ kind, onServer: true, run: async (concurrency, time) => await httpLoad(load, concurrency, time) })

/**
 * Measures a hook against its baseline at every concurrency. The two alternate in slices of about a second, so that
 * both see the same share of a busy machine; one slice for a multi-megabyte body, where every cut-off slice would
 * leave the server seconds of work to finish before the next.
 */
async function compare (server: HookServer, name: string, baseline: Side, hook: Side, slices: number): Promise<void> {
  for (const side of [baseline, hook]) {
    await server.idle()
    await side.run(16, warmupSeconds)
  }
  for (const concurrency of CONCURRENCY) {
    const baselineRecord: SideRecord = { samples: [], server: null }
    const hookRecord: SideRecord = { samples: [], server: null }
    for (let slice = 0; slice < slices; slice++) {
      for (const [side, record] of [[baseline, baselineRecord], [hook, hookRecord]] as const) {
        await server.idle()
        if (side.onServer) {
          const [sample, peak, cpu] = await server.measured(async () => await side.run(concurrency, seconds / slices))
          record.samples.push(sample)
          record.server = { peakRssMiB: Math.max(record.server?.peakRssMiB ?? 0, peak), cpuMs: (record.server?.cpuMs ?? 0) + cpu }
        } else {
          record.samples.push(await side.run(concurrency, seconds / slices))
        }
      }
    }
    const baselineMeasurement = measurement(baselineRecord.samples)
    const level = [
      tableRow(name, baseline.kind, concurrency, baselineMeasurement, baselineRecord.server),
      tableRow(name, hook.kind, concurrency, measurement(hookRecord.samples), hookRecord.server, baselineMeasurement)
    ]
    level.forEach(progress)
    rows.push(...level)
  }
}

/** Sends one request once the server is idle; a refusal is recorded as the case's failure. */
async function preflight (server: HookServer, name: string, load: HttpLoad, check: (body: string) => boolean = () => true): Promise<string | undefined> {
  await server.idle()
  const body = typeof load.body === 'string' ? load.body : load.body()
  const answer = await post(`${load.url}${load.path}`, body)
  if (answer.status === 200 && check(answer.text)) return answer.text
  failures.push(`${name}: ${load.path} answered ${answer.status}: ${answer.text.slice(0, 500)}`)
  return undefined
}

const pgLoop = (query: () => [string, unknown[]]): Side => ({ kind: 'pg loop', onServer: false, run: async (concurrency, time) => await poolLoad(loopPool, query, concurrency, time) })
const slices = Math.max(1, Math.round(seconds))

let server: HookServer | undefined
let wholeRunPeakRssMiB = 0
let startupPeakRssMiB = 0
let resyncEnded: number | undefined
let resyncBefore = 0
let resyncTable = ''
try {
  server = await startServer(serverEnv)
  log(`bench: ${seconds} s per run, concurrency ${CONCURRENCY.join('/')}, pool ${config.database.poolMax}, server at ${server.url}`)

  const resyncName = 'PostgresWriter unchanged resync'
  if (selected(resyncName)) {
    const request = postgresWriterResync()
    resyncTable = request.object.spec.table
    const load: HttpLoad = { url: server.url, path: '/postgres-writer/sync', body: JSON.stringify(request), verifyBody: rowWritten }
    // The first sync writes the row; its answer is the status that every later, unchanged resync observes.
    const first = await preflight(server, resyncName, load, rowWritten)
    if (first !== undefined) {
      request.object.status = (JSON.parse(first) as { status: unknown }).status
      load.body = JSON.stringify(request)
      // In this run's fresh schema, the first non-zero count is that first sync's insert, once published.
      for (const deadline = Date.now() + STATS_FLUSH_MS + 5000; resyncBefore === 0 && Date.now() < deadline; await sleep(200)) {
        resyncBefore = await rowWrites(admin, schema, resyncTable)
      }
      const { namespace, name } = request.object.metadata
      const { name: person, age, country } = request.object.spec
      const sql = rowStatements.updateInPlace(schema, resyncTable)
      const query = (): [string, unknown[]] => { resync.loopQueries++; return [sql, [`${namespace}/${name}`, person, age, country]] }
      await compare(server, resyncName, pgLoop(query), onServer('hook', load), slices)
      resyncEnded = Date.now()
      resync.hookRequests = rows.filter((row) => row.case === resyncName && row.kind === 'hook').reduce((sum, row) => sum + row.requests, 0)
    }
  }

  const composites = compositeCases().filter((c) => selected(c.name))
  const measureComposite = async (composite: CompositeCase, hookServer: HookServer): Promise<void> => {
    const body = composite.body()
    const hook: HttpLoad = { url: hookServer.url, path: composite.path, body }
    const parseOnly: HttpLoad = { url: hookServer.url, path: '/bench/parse-only', body }
    if (await preflight(hookServer, composite.name, hook) === undefined || await preflight(hookServer, composite.name, parseOnly) === undefined) return
    await compare(hookServer, composite.name, onServer('parse-only', parseOnly), onServer('hook', hook), composite.large ? 1 : slices)
  }
  for (const composite of composites.filter((c) => !c.large)) await measureComposite(composite, server)

  if (resyncEnded !== undefined) {
    await sleep(Math.max(0, resyncEnded + STATS_FLUSH_MS - Date.now()))
    resync.rowWrites = await rowWrites(admin, schema, resyncTable) - resyncBefore
  }

  const createName = 'PostgresWriter create'
  if (selected(createName)) {
    const { request, next } = postgresWriterCreate()
    const { namespace } = request.object.metadata
    const { table: createTable, name: person, age, country } = request.object.spec
    const sql = rowStatements.upsert(schema, createTable)
    let created = 0
    const load: HttpLoad = { url: server.url, path: '/postgres-writer/sync', body: next, verifyBody: rowWritten }
    if (await preflight(server, createName, load, rowWritten) !== undefined) {
      await compare(server, createName, pgLoop(() => [sql, [`${namespace}/pg-loop-${created++}`, person, age, country]]), onServer('hook', load), slices)
    }
  }

  for (const composite of composites.filter((c) => c.large)) await measureComposite(composite, server)
  wholeRunPeakRssMiB = server.wholeRunPeakRssMiB()
  startupPeakRssMiB = server.startupPeakRssMiB
} finally {
  await server?.stop()
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await Promise.all([admin.end(), loopPool.end()])
  await stopDatabase()
}

const verdicts = targets({
  rows,
  compositeCases: [...new Set(rows.filter((row) => row.kind === 'parse-only').map((row) => row.case))],
  resync,
  wholeRunPeakRssMiB,
  startupPeakRssMiB
})
const elapsedSeconds = Math.round((Date.now() - started) / 1000)

log('')
log(table(rows))
log('')
log(targetLines(verdicts))
for (const failure of failures) log(`FAILED ${failure}`)
log(`\n${rows.length} runs in ${elapsedSeconds} s; figures in bench/results.json`)

await writeFile(join(root, 'bench', 'results.json'), `${JSON.stringify({
  date: new Date(started).toISOString(),
  node: process.version,
  cpus: cpus().length,
  secondsPerRun: seconds,
  concurrency: CONCURRENCY,
  poolMax: config.database.poolMax,
  elapsedSeconds,
  rows,
  resync,
  wholeRunPeakRssMiB,
  startupPeakRssMiB,
  targets: verdicts,
  failures
}, null, 2)}\n`)

process.exit(failures.length > 0 || rows.some((row) => row.failed) ? 1 : 0)
