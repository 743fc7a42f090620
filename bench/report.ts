import { chart, type Axis, type Bar, type Guide, type Point, type Series } from './charts.js'
import type { RecordingFacts } from '../dev/hook-recording.js'
import type { Measurement } from './load.js'

/**
 * The benchmark's table, its verdict on each target, and the page docs/benchmarks.md made from a run's results, with
 * its charts.
 */

export type SideName = 'ours' | 'ours, ETag' | 'fastify peer' | 'node:http peer' | 'receive floor' | 'naive hook' | 'pg loop'

/**
 * What this server's rows are compared with: both peers (PodSet), each figure with the better one's (the larger
 * peak RSS, as the target asks); the fastify peer alone, the bare fastify hook of the fixed cost; or the naive hook
 * (PostgresWriter, and the replayed burst).
 */
export type Reference = 'peers' | 'fastify peer' | 'naive hook'

/** The case of the fixed cost of a call: the smallest PodSet, at the pace of a busy Metacontroller. */
export const FIXED_COST_CASE = 'Fixed cost: PodSet 1 pod at 1,000 calls/s'
/** The case of the burst recorded from a real Metacontroller, replayed (bench/replay.ts). */
export const REPLAY_CASE = 'Replayed burst'

export interface Row extends Measurement {
  case: string
  side: SideName
  concurrency: number
  /** The side's process's peak resident set during this row; null for the pg loop, which runs in the bench. */
  peakRssMiB: number | null
  /** The side's process's CPU time (all threads, read to the nanosecond) over the requests it answered; null for the pg loop. */
  serverCpuMsPerRequest: number | null
  /**
   * The bench's own CPU time (autocannon, or the pg loop) over the time it drove this row: near 1 when the load, not
   * the side, set the pace (the bench runs on one CPU when the machine has two).
   */
  loadCpuShare: number | null
  /** For this server's rows: what its ratios are taken against (same case, same concurrency, same run). */
  reference: Reference | null
  /** An answer with an unexpected status, a socket error or a failed body check. */
  failed: boolean
}

export interface Target {
  target: string
  verdict: 'met' | 'not met' | 'not measured'
  figure: string
}

export interface RunFacts {
  rows: Row[]
  /** This server's unchanged resyncs and the pg loop's statements, and the row writes those resyncs caused. */
  resync: { rowWrites: number, hookRequests: number, loopQueries: number }
  /** Per side's processes (each case starts its own), over the whole run. */
  wholeRunPeakRssMiB: Record<string, number>
  /** Per side, the largest peak RSS of its processes once started and listening, before their first request. */
  readyRssMiB: Record<string, number>
  /** The Deployment's memory limit. */
  memoryLimitMiB: number
}

/** What the run replayed, and whether each side's answers and rows came out as the recording says they must. */
export interface ReplaySummary {
  recording: RecordingFacts
  /** Calls in flight at once, each object's calls in their recorded order. */
  concurrency: number
  /** Processes per side, one after another, whose measured passes are pooled; one in runs that do not say. */
  processes?: number
  /** Passes of the whole recording per process that warm it up, checked but not measured; one in runs that do not say. */
  warmupPasses?: number
  /** Passes of the whole recording per process after the warm-up, each on objects of its own. */
  passes: number
  /** Per side: the server's CPU a call on a process's first pass, as a process just started pays it. */
  firstPassCpuMsPerCall?: Partial<Record<SideName, number>>
  /** Per side: answers that differed from what the recording says, rows found at the end and rows expected. */
  checks: Partial<Record<SideName, { answersDiffering: number, rowsExpected: number, rowsFound: number, rowsMatched: boolean }>>
}

const PEERS: SideName[] = ['fastify peer', 'node:http peer']
/** This server's processes: the one that answers changed requests, and the one that answers 304s. */
const OURS: SideName[] = ['ours', 'ours, ETag']
/** The sizes of the 304 targets, and of those on changed requests and peak RSS that are taken from 100 pods up. */
const FROM_100_PODS = ['PodSet 100 pods', 'PodSet 2,000 pods']
/** A call's fixed cost, at most this many times a bare fastify hook's. */
const FIXED_COST_CPU = 1.25
/** A changed request's CPU time, at most the fastify peer's at every size, and this share of the better peer's from 100 pods up. */
const CHANGED_CPU = 0.9
/** This server's RSS once started, at most the fastify peer's plus this many MiB. */
const READY_RSS_MARGIN_MIB = 10
/** The replayed burst's CPU per call, at most this many times the naive hook's. */
const REPLAY_CPU = 1.25

const times = (ratio: number | undefined): string => ratio === undefined || Number.isNaN(ratio) ? '–' : `${ratio.toFixed(2)}×`
/** A figure as results.json holds it: JSON has no NaN, so a figure no request gave is null there. */
const missing = (value: number | null): value is null => value === null || Number.isNaN(value)
const ms = (value: number | null): string => missing(value) ? '–' : value.toFixed(2)
const rate = (value: number | null): string => missing(value) ? '–' : value >= 100 ? value.toFixed(0) : value.toFixed(1)

function find (rows: readonly Row[], name: string, side: SideName, concurrency: number): Row | undefined {
  return rows.find((row) => row.case === name && row.side === side && row.concurrency === concurrency)
}

interface Ratios { requestsPerSecond: number | undefined, cpu: number | undefined, rss: number | undefined }

function ratio (a: number | null | undefined, b: number | null | undefined): number | undefined {
  return a === null || a === undefined || b === null || b === undefined || b === 0 ? undefined : a / b
}

/** The best of the values present: the lowest with `Math.min`, the highest with `Math.max`. */
function bestOf (values: ReadonlyArray<number | null | undefined>, pick: (...values: number[]) => number): number | undefined {
  const present = values.filter((value): value is number => value !== null && value !== undefined && !Number.isNaN(value))
  return present.length === 0 ? undefined : pick(...present)
}

const peerRows = (rows: readonly Row[], row: Pick<Row, 'case' | 'concurrency'>): Row[] =>
  PEERS.map((peer) => find(rows, row.case, peer, row.concurrency)).filter((peer) => peer !== undefined)

/**
 * A row of this server over its reference: requests/s and CPU per request over the better peer's (the higher, the
 * lower), peak RSS over the larger peer's; or each over the one side it is compared with.
 */
function ratiosToReference (rows: readonly Row[], row: Row): Ratios | undefined {
  if (row.reference === null) return undefined
  const references = row.reference === 'peers' ? peerRows(rows, row) : [find(rows, row.case, row.reference, row.concurrency)].filter((found) => found !== undefined)
  if (references.length === 0) return undefined
  return {
    requestsPerSecond: ratio(row.requestsPerSecond, bestOf(references.map((peer) => peer.requestsPerSecond), Math.max)),
    cpu: ratio(row.serverCpuMsPerRequest, bestOf(references.map((peer) => peer.serverCpuMsPerRequest), Math.min)),
    rss: ratio(row.peakRssMiB, bestOf(references.map((peer) => peer.peakRssMiB), Math.max))
  }
}

/** How the table names a row's reference, after its ratios. */
const REFERENCE_LABEL: Record<Reference, string> = { peers: 'peers', 'fastify peer': 'fastify', 'naive hook': 'naive' }

const HEADER = ['case', 'side', 'conc', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'peak RSS MiB', 'CPU ms/req', 'load CPU', 'vs peer: req/s', 'CPU', 'RSS']

/** The cells of the table, one line per row, in HEADER's order. */
function cells (rows: readonly Row[]): string[][] {
  return rows.map((row) => {
    const ratios = ratiosToReference(rows, row)
    return [
      row.case,
      row.side,
      String(row.concurrency),
      rate(row.requestsPerSecond),
      ms(row.p50Ms),
      ms(row.p99Ms),
      ms(row.maxMs),
      `${row.unexpectedStatus + row.errors}${row.failed ? ' FAILED' : ''}`,
      row.peakRssMiB === null ? '–' : row.peakRssMiB.toFixed(0),
      row.serverCpuMsPerRequest === null ? '–' : row.serverCpuMsPerRequest.toFixed(3),
      row.loadCpuShare === null ? '–' : `${(100 * row.loadCpuShare).toFixed(0)} %`,
      ratios === undefined || row.reference === null ? '' : `${times(ratios.requestsPerSecond)} ${REFERENCE_LABEL[row.reference]}`,
      ratios === undefined ? '' : times(ratios.cpu),
      ratios === undefined ? '' : times(ratios.rss)
    ]
  })
}

/** The table as the bench prints it: columns padded, figures right-aligned. */
export function table (rows: readonly Row[]): string {
  const lines = cells(rows)
  const widths = HEADER.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column]?.length ?? 0)))
  const format = (cells: string[]): string => cells.map((cell, column) => column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)).join('  ')
  return [format(HEADER), format(widths.map((width) => '-'.repeat(width))), ...lines.map(format)].join('\n')
}

const markdownRow = (cells: readonly string[]): string => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`

function markdownTable (header: readonly string[], align: readonly ('left' | 'right')[], lines: readonly string[][]): string {
  return [markdownRow(header), `|${align.map((side) => side === 'left' ? '---' : '--:').join('|')}|`, ...lines.map(markdownRow)].join('\n')
}

interface Check { label: string, value: number | undefined, met: (value: number) => boolean, show: (value: number) => string }

/** The verdict on `target` from its checks; a measured target's figures end with `note`, when given. */
function verdict (target: string, checks: Check[], note?: string): Target {
  const measured = checks.filter((check) => check.value !== undefined && !Number.isNaN(check.value))
  if (measured.length === 0) return { target, verdict: 'not measured', figure: 'no such case in this run' }
  const figures = checks.map((check) => `${check.label} ${check.value === undefined || Number.isNaN(check.value) ? 'not measured' : check.show(check.value)}`).join(', ')
  return {
    target,
    verdict: measured.length === checks.length && measured.every((check) => check.met(check.value as number)) ? 'met' : 'not met',
    figure: note === undefined ? figures : `${figures}; ${note}`
  }
}

/** One check per row of `side` in the cases named, at every concurrency measured. */
function perRow (rows: readonly Row[], cases: (name: string) => boolean, side: SideName, value: (row: Row) => number | undefined, met: (value: number) => boolean, show: (value: number, row: Row) => string): Check[] {
  return rows.filter((row) => row.side === side && cases(row.case)).map((row) => ({ label: `${row.case} @${row.concurrency}`, value: value(row), met, show: (measured) => show(measured, row) }))
}

/** A side's figure in MiB, or – when the run has none. */
const mebibytes = (figures: Record<string, number>, side: SideName): string => `${figures[side]?.toFixed(0) ?? '–'} MiB`
const peersMebibytes = (figures: Record<string, number>): string => PEERS.map((peer) => `${peer} ${mebibytes(figures, peer)}`).join(', ')

export function targets (facts: RunFacts): Target[] {
  const { rows } = facts
  const podSet = (name: string): boolean => name.startsWith('PodSet')
  const fromHundredPods = (name: string): boolean => FROM_100_PODS.includes(name)
  /** A figure of this server's row over the same figure of `side`'s row, at the row's case and concurrency. */
  const over = (side: SideName, field: 'requestsPerSecond' | 'serverCpuMsPerRequest') => (row: Row): number | undefined =>
    ratio(row[field], find(rows, row.case, side, row.concurrency)?.[field])
  /** A row's CPU per request over the better peer's (the lower). */
  const cpuOverBetterPeer = (row: Row): number | undefined => ratio(row.serverCpuMsPerRequest, bestOf(peerRows(rows, row).map((peer) => peer.serverCpuMsPerRequest), Math.min))
  /**
   * A 304 side's requests/s over the better peer's (the higher), or its CPU per request over the better peer's (the
   * lower), at the row's case and concurrency.
   */
  const etagOverPeers = (row: Row, side: SideName, field: 'requestsPerSecond' | 'serverCpuMsPerRequest'): number | undefined => {
    const best = bestOf(peerRows(rows, row).map((peer) => peer[field]), field === 'requestsPerSecond' ? Math.max : Math.min)
    return ratio(find(rows, row.case, side, row.concurrency)?.[field], best)
  }
  /** The ratio, and the receive floor's in the same place: what no Node.js server answering 304 gets under. */
  const withFloor = (field: 'requestsPerSecond' | 'serverCpuMsPerRequest') => (value: number, row: Row): string => {
    const floor = etagOverPeers(row, 'receive floor', field)
    return floor === undefined ? times(value) : `${times(value)} (receive floor ${times(floor)})`
  }
  /** The ratio, and the CPU per request behind it: this server's, then the reference's. */
  const withCpu = (reference: SideName) => (value: number, row: Row): string =>
    `${times(value)} (${ms(row.serverCpuMsPerRequest)} against ${ms(find(rows, row.case, reference, row.concurrency)?.serverCpuMsPerRequest ?? null)} ms)`
  const readyRss = bestOf(OURS.map((side) => facts.readyRssMiB[side] ?? null), Math.max)
  const fastifyReadyRss = facts.readyRssMiB['fastify peer']
  return [
    verdict(`Fixed cost of a call: server CPU per call <= ${FIXED_COST_CPU}x a bare fastify hook's (a 1-pod PodSet at 1,000 calls/s)`,
      perRow(rows, (name) => name === FIXED_COST_CASE, 'ours', over('fastify peer', 'serverCpuMsPerRequest'), (r) => r <= FIXED_COST_CPU, withCpu('fastify peer'))),
    verdict('Changed requests: server CPU per request <= 1.0x the fastify peer\'s at every size (PodSet 10, 100 and 2,000 pods)',
      perRow(rows, podSet, 'ours', over('fastify peer', 'serverCpuMsPerRequest'), (r) => r <= 1.0, times)),
    verdict(`Changed requests from 100 pods up: server CPU per request <= ${CHANGED_CPU}x the better peer's (fastify's or node:http's, the lower) (PodSet 100 and 2,000 pods)`,
      perRow(rows, fromHundredPods, 'ours', cpuOverBetterPeer, (r) => r <= CHANGED_CPU, times)),
    verdict('Unchanged resync with its ETag: >= 10x the peers\' requests/s (PodSet 100 and 2,000 pods)',
      perRow(rows, fromHundredPods, 'ours', (row) => etagOverPeers(row, 'ours, ETag', 'requestsPerSecond'), (r) => r >= 10, withFloor('requestsPerSecond'))),
    verdict('Unchanged resync with its ETag: <= 1/10 of the peers\' CPU per request (PodSet 100 and 2,000 pods)',
      perRow(rows, fromHundredPods, 'ours', (row) => etagOverPeers(row, 'ours, ETag', 'serverCpuMsPerRequest'), (r) => r <= 0.1, withFloor('serverCpuMsPerRequest'))),
    // What loading its code and libraries takes, which no request gives back.
    verdict(`RSS once started, before any request: <= the fastify peer's + ${READY_RSS_MARGIN_MIB} MiB`, [{
      label: 'this server',
      value: readyRss === undefined || fastifyReadyRss === undefined ? undefined : readyRss - fastifyReadyRss,
      met: (margin) => margin <= READY_RSS_MARGIN_MIB,
      show: (margin) => `${readyRss?.toFixed(0) ?? '–'} MiB, ${margin >= 0 ? '+' : '−'}${Math.abs(margin).toFixed(0)} MiB over the fastify peer's (${peersMebibytes(facts.readyRssMiB)})`
    }]),
    verdict('Peak RSS from 100 pods up: <= the larger peer\'s (fastify\'s or node:http\'s) (PodSet 100 and 2,000 pods)',
      perRow(rows, fromHundredPods, 'ours', (row) => ratio(row.peakRssMiB, bestOf(peerRows(rows, row).map((peer) => peer.peakRssMiB), Math.max)), (r) => r <= 1.0, times)),
    verdict(`Peak RSS under the Deployment's memory limit (${facts.memoryLimitMiB} MiB) over the whole run`, [{
      label: 'this server',
      value: bestOf(OURS.map((side) => facts.wholeRunPeakRssMiB[side] ?? null), Math.max),
      met: (peak) => peak < facts.memoryLimitMiB,
      show: (peak) => `${peak.toFixed(0)} MiB (peers: ${peersMebibytes(facts.wholeRunPeakRssMiB)})`
    }]),
    verdict('PostgresWriter create: >= 0.8x the naive hook\'s requests/s on the same database',
      perRow(rows, (name) => name === 'PostgresWriter create', 'ours', over('naive hook', 'requestsPerSecond'), (r) => r >= 0.8, times)),
    verdict('PostgresWriter unchanged resync: >= 0.9x the naive hook\'s requests/s on the same database',
      perRow(rows, (name) => name === 'PostgresWriter unchanged resync', 'ours', over('naive hook', 'requestsPerSecond'), (r) => r >= 0.9, times)),
    verdict(`Replayed burst of real Metacontroller calls: server CPU per call <= ${REPLAY_CPU}x the naive hook's`,
      perRow(rows, (name) => name === REPLAY_CASE, 'ours', over('naive hook', 'serverCpuMsPerRequest'), (r) => r <= REPLAY_CPU, withCpu('naive hook'))),
    {
      target: 'PostgresWriter unchanged resync: zero row writes (pg_stat_user_tables)',
      verdict: facts.resync.hookRequests === 0 ? 'not measured' : facts.resync.rowWrites === 0 ? 'met' : 'not met',
      figure: `${facts.resync.rowWrites} row writes over ${facts.resync.hookRequests.toLocaleString('en')} hook resyncs and ${facts.resync.loopQueries.toLocaleString('en')} pg loop statements`
    }
  ]
}

/**
 * What one PostgresWriter create costs in PostgreSQL, per create, counted from the protocol: round trips (answers a
 * client waits for) and statements run.
 */
export interface CreateCosts {
  ours: { roundTrips: number, statements: number }
  naiveHook: { roundTrips: number, statements: number }
}

const perCreate = (value: number): string => Number.isInteger(value) ? String(value) : value.toFixed(2)

export function createCostLines (costs: CreateCosts): string {
  return `PostgresWriter create, per create: this server ${perCreate(costs.ours.statements)} statements in ${perCreate(costs.ours.roundTrips)} round trip(s), ` +
    `the naive hook ${perCreate(costs.naiveHook.statements)} in ${perCreate(costs.naiveHook.roundTrips)}`
}

/** The page's section on what a create costs in PostgreSQL; none when the run did not count it. */
function createCostSection (costs: CreateCosts | null | undefined): string[] {
  if (costs === null || costs === undefined) return []
  return [
    '',
    '## What a PostgresWriter create costs in PostgreSQL',
    '',
    'Counted from the PostgreSQL protocol (a proxy between the hook and PostgreSQL, `dev/pg-wire-count.ts`), per create:',
    'round trips are the answers the hook waits for, statements the statements PostgreSQL runs.',
    '',
    markdownTable(['side', 'round trips', 'statements', 'what they are'], ['left', 'right', 'right', 'left'], [
      ['ours', perCreate(costs.ours.roundTrips), perCreate(costs.ours.statements), 'the row\'s advisory lock, then one statement that checks the tombstone, writes the row and records it, sent together'],
      ['naive hook', perCreate(costs.naiveHook.roundTrips), perCreate(costs.naiveHook.statements), 'one `INSERT … ON CONFLICT`, with no tombstone and no record']
    ])
  ]
}

export function targetLines (list: readonly Target[]): string {
  const label = { met: 'met         ', 'not met': 'NOT MET     ', 'not measured': 'not measured' }
  return list.map((t) => `${label[t.verdict]}  ${t.target}: ${t.figure}`).join('\n')
}

/** A case's request: its size, and the objects it carries besides its parent (a composite's observed children). */
export interface RequestBody {
  bytes: number
  children: number
}

/** This server's command line, as the Deployment runs it: the runtime's environment, Node.js's flags, the script. */
export function serverCommand ({ runtimeEnv = {}, nodeArgs }: Pick<Results, 'runtimeEnv' | 'nodeArgs'>): string {
  return [...Object.entries(runtimeEnv).map(([name, value]) => `${name}=${value}`), 'node', ...nodeArgs, 'dist/server.js'].join(' ')
}

/** What a run writes to bench/results.json: the page and its charts are made from it alone. */
export interface Results {
  /** When the run started (ISO 8601). */
  date: string
  machine: { cpu: string, cpus: number, memoryGiB: number, system: string }
  node: string
  placement: { sides: string, load: string } | string
  secondsPerRun: number
  /** Seconds per side of the fixed cost's case; absent from runs that gave it secondsPerRun like every case. */
  fixedCostSeconds?: number
  /** Sets of processes each case ran on, one after another, its figures pooled over them; one in runs that do not say. */
  processSets?: number
  /** BENCH_CASES when the run measured only the cases it matches; null for every case. */
  cases: string | null
  concurrency: number[]
  poolMax: number
  postgresFsync: string
  nodeArgs: string[]
  /** The environment the Deployment sets for the runtime under the server; absent from runs before it set any. */
  runtimeEnv?: Record<string, string>
  memoryLimitMiB: number
  elapsedSeconds: number
  /** Each case's request, by case name. */
  bodies: Record<string, RequestBody>
  rows: Row[]
  resync: RunFacts['resync']
  /** Counted when the run measured the PostgresWriter create; absent from runs before it was counted. */
  createCosts?: CreateCosts | null
  /** When the run replayed the recorded burst; absent from runs before it was replayed. */
  replay?: ReplaySummary | null
  wholeRunPeakRssMiB: RunFacts['wholeRunPeakRssMiB']
  readyRssMiB: RunFacts['readyRssMiB']
  targets: Target[]
  failures: string[]
}

/**
 * Below this many seconds per side and concurrency, or with cases left out, the page says it is from a quick look:
 * a slice of a second or less is mostly warm-up and scheduling noise on a shared machine.
 */
export const FULL_RUN_SECONDS = 3

/** The charts' files, in docs/ beside the page. */
export const CHART_FILES = { cpu: 'benchmarks-cpu.svg', memory: 'benchmarks-memory.svg' } as const

/** The concurrency the charts and the summary show (Metacontroller's default of 5 workers), when the run measured it. */
const SHOWN_CONCURRENCY = 5

const shownConcurrency = (results: Pick<Results, 'concurrency'>): number =>
  results.concurrency.includes(SHOWN_CONCURRENCY) ? SHOWN_CONCURRENCY : results.concurrency[0] ?? SHOWN_CONCURRENCY

/** A CPU time, in the unit that reads best: `45 µs`, `0.37 ms`, `3.8 ms`, `114 ms`. */
export function duration (ms: number): string {
  if (ms < 0.1) return `${(ms * 1000).toFixed(0)} µs`
  if (ms < 1) return `${ms.toFixed(2)} ms`
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(0)} ms`
}

/** A request's size: `56 KiB`, `10.6 MiB`. */
export function size (bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/** The PodSet cases measured, smallest first, with their requests. */
function podSetCases (results: Results): Array<{ name: string, body: RequestBody }> {
  return Object.entries(results.bodies)
    .filter(([name]) => name.startsWith('PodSet') && results.rows.some((row) => row.case === name))
    .map(([name, body]) => ({ name, body }))
    .sort((a, b) => a.body.bytes - b.body.bytes)
}

/** A side's CPU per request in a case at the shown concurrency, and its range over every concurrency. */
function cpuPoint (results: Results, name: string, sides: readonly SideName[], x: number): Point | undefined {
  const at = (concurrency: number): number | undefined =>
    bestOf(sides.map((side) => find(results.rows, name, side, concurrency)?.serverCpuMsPerRequest), Math.min)
  const shown = at(shownConcurrency(results))
  const all = results.concurrency.map(at).filter((value) => value !== undefined)
  return shown === undefined ? undefined : { x, y: shown, low: Math.min(...all), high: Math.max(...all) }
}

/**
 * What a changed sync costs a side: its CPU per request at the smallest PodSet measured, and what each further child
 * object adds, on the line from there to the largest.
 */
function smallestAndPerObject (results: Results, sides: readonly SideName[]): { smallest: number, children: number, object: number } | undefined {
  const cases = podSetCases(results)
  const [first, last] = [cases[0], cases[cases.length - 1]]
  if (first === undefined || last === undefined || first === last) return undefined
  const [small, large] = [cpuPoint(results, first.name, sides, 0), cpuPoint(results, last.name, sides, 0)]
  if (small === undefined || large === undefined) return undefined
  return { smallest: small.y, children: first.body.children, object: (large.y - small.y) / (last.body.children - first.body.children) }
}

/** A side's row in a case at the shown concurrency, or at the one concurrency the case was measured at. */
function shownRow (results: Results, name: string, side: SideName): Row | undefined {
  return find(results.rows, name, side, shownConcurrency(results)) ?? results.rows.find((row) => row.case === name && row.side === side)
}

/** What a burst holds, in words: `300 PostgresWriters created, their statuses written, resynced, and 225 of them deleted`. */
function burstWords (recording: RecordingFacts): string {
  return `${recording.objects.toLocaleString('en')} PostgresWriters applied at once, their statuses written, resynced, and ${recording.deleted.toLocaleString('en')} of them deleted`
}

/**
 * The opening of the page: what a call costs this server, around its controller's work and on real traffic, then per
 * call and per object against the peers.
 */
function summary (results: Results): string[] {
  const concurrency = shownConcurrency(results)
  const cpu = (name: string, side: SideName): number | undefined => find(results.rows, name, side, concurrency)?.serverCpuMsPerRequest ?? undefined
  const sentences: string[] = []
  const [fixed, bare] = (['ours', 'fastify peer'] as const).map((side) => shownRow(results, FIXED_COST_CASE, side)?.serverCpuMsPerRequest ?? undefined)
  if (fixed !== undefined && bare !== undefined) {
    sentences.push(`**A hook call with next to no work of its own costs this server ${duration(fixed)} of CPU**, ${times(ratio(fixed, bare))} a bare fastify hook's ${duration(bare)} ` +
      '(a 1-pod PodSet sync at 1,000 calls/s; the difference is what this server does around the answer: the parent and its spec read, the answer weighed and bounded, admission, validation, the ETag, a log line and a metric).')
  }
  const [replayed, naive] = (['ours', 'naive hook'] as const).map((side) => shownRow(results, REPLAY_CASE, side))
  if (replayed?.serverCpuMsPerRequest != null && naive?.serverCpuMsPerRequest != null && results.replay != null) {
    const { recording } = results.replay
    sentences.push(`On a burst of ${recording.calls.toLocaleString('en')} calls recorded from a real Metacontroller ${recording.metacontroller} (${burstWords(recording)}), ` +
      `it spent **${duration(replayed.serverCpuMsPerRequest)} of CPU a call**, ${times(ratio(replayed.serverCpuMsPerRequest, naive.serverCpuMsPerRequest))} ` +
      `a naive hook's ${duration(naive.serverCpuMsPerRequest)}.`)
  }
  const ours = smallestAndPerObject(results, ['ours'])
  const peers = smallestAndPerObject(results, PEERS)
  const cases = podSetCases(results)
  if (ours !== undefined && peers !== undefined) {
    sentences.push(`A changed sync costs this server **${duration(ours.smallest)} of CPU with ${ours.children} objects in the request, and ` +
      `${duration(ours.object)} more per further object** (the better of two minimal peers: ${duration(peers.smallest)} and ${duration(peers.object)}): ` +
      `a PodSet sync took ${cases.map(({ name, body }) => `${duration(cpu(name, 'ours') ?? Number.NaN)} with ${body.children.toLocaleString('en')} pods (${size(body.bytes)})`).join(', ')}.`)
  }
  const etag = cases.map(({ name }) => cpu(name, 'ours, ETag')).filter((value) => value !== undefined)
  if (etag.length > 0) {
    sentences.push(`An unchanged resync that carries the ETag of its last answer is answered 304 unparsed, for ${etag.map(duration).join(', ')} at those sizes.`)
  }
  const writer = ['PostgresWriter unchanged resync', 'PostgresWriter create'].map((name) => [cpu(name, 'ours'), cpu(name, 'naive hook')])
  const [[resync, naiveResync], [create, naiveCreate]] = writer as [[number | undefined, number | undefined], [number | undefined, number | undefined]]
  if (resync !== undefined && create !== undefined) {
    sentences.push(`A PostgresWriter sync costs ${duration(resync)} when its object is unchanged and ${duration(create)} when it is new ` +
      `(a naive hook that writes the row on every call: ${duration(naiveResync ?? Number.NaN)} and ${duration(naiveCreate ?? Number.NaN)}).`)
  }
  return sentences.length === 0 ? [] : [sentences.join(' '), '']
}

const COLORS: Partial<Record<SideName, { color: string, dash?: string }>> = {
  ours: { color: '#0969da' },
  'ours, ETag': { color: '#0969da', dash: '7 4' },
  'fastify peer': { color: '#bc4c00' },
  'node:http peer': { color: '#1a7f37' },
  'receive floor': { color: '#6e7781', dash: '2 3' }
}

const LEGEND: Partial<Record<SideName, string>> = {
  ours: 'this server',
  'ours, ETag': 'this server, unchanged (304)',
  'fastify peer': 'fastify peer',
  'node:http peer': 'node:http peer',
  'receive floor': 'receive floor (304)'
}

const trimmed = (value: number): string => String(Number(value.toPrecision(3)))
/** The x axis of a PodSet chart: the request's size, in KiB, a tick at each power of 4 (16 KiB, 64 KiB, …). */
const REQUEST_AXIS: Axis = { title: 'request body (log scale)', format: (kib) => kib >= 1024 ? `${trimmed(kib / 1024)} MiB` : `${trimmed(kib)} KiB`, scale: { log: 4 } }

/** One line per side over the PodSet sizes, of a figure of its rows. */
function podSetSeries (results: Results, sides: readonly SideName[], figure: (name: string, side: SideName, x: number) => Point | undefined): Series[] {
  return sides.map((side): Series => ({
    label: LEGEND[side] ?? side,
    ...COLORS[side] ?? { color: '#000000' },
    points: podSetCases(results).map(({ name, body }) => figure(name, side, body.bytes / 1024)).filter((point) => point !== undefined)
  })).filter((series) => series.points.length > 0)
}

/**
 * A side's CPU per request over the lowest of `references`' in a case, at the shown concurrency, and its range over
 * every concurrency.
 */
function ratioPoint (results: Results, name: string, side: SideName, references: readonly SideName[], x: number): Point | undefined {
  const at = (concurrency: number): number | undefined => ratio(
    find(results.rows, name, side, concurrency)?.serverCpuMsPerRequest,
    bestOf(references.map((reference) => find(results.rows, name, reference, concurrency)?.serverCpuMsPerRequest), Math.min))
  const measured = results.concurrency.map(at).filter((value) => value !== undefined)
  if (measured.length === 0) return undefined
  // A case measured at one concurrency only (the fixed cost, the replay) is shown at that one.
  const shown = at(shownConcurrency(results)) ?? measured[0] as number
  return { x, y: shown, low: Math.min(...measured), high: Math.max(...measured) }
}

/** The line that each ratio is read against: its reference's own figure. */
const parity = (reference: string): Guide => ({ y: 1, label: `1.0: ${reference}` })

/**
 * The page's charts, by file name: CPU per request as a ratio to the better peer's against the request's size, with
 * each other comparison as a ratio to its reference; and peak RSS. None without PodSet rows.
 */
export function benchmarkCharts (results: Results): Record<string, string> {
  const concurrency = shownConcurrency(results)
  const whiskers = `at concurrency ${concurrency}; whiskers: ${results.concurrency.join(', ')}`
  const cpuSeries = podSetSeries(results, ['ours', 'ours, ETag', 'fastify peer', 'receive floor'], (name, side, x) => ratioPoint(results, name, side, PEERS, x))
  if (cpuSeries.length === 0) return {}
  const comparisons: Array<[string, string, SideName]> = [
    ['fixed cost', FIXED_COST_CASE, 'fastify peer'],
    ['resync', 'PostgresWriter unchanged resync', 'naive hook'],
    ['create', 'PostgresWriter create', 'naive hook'],
    ['burst', REPLAY_CASE, 'naive hook']
  ]
  const comparisonBars = comparisons.map(([label, name, reference]) => {
    const point = ratioPoint(results, name, 'ours', [reference], 0)
    const bars: Bar[] = point === undefined ? [] : [{ label: LEGEND.ours ?? 'ours', color: COLORS.ours?.color ?? '#000000', value: point.y, low: point.low, high: point.high }]
    return { label, bars }
  }).filter((group) => group.bars.length > 0)
  const cpu = chart(`CPU time per request over the better peer's, against the request's size, ${whiskers}`, [
    {
      width: 600,
      panel: {
        kind: 'lines',
        title: `PodSet sync: CPU over the better peer's (${whiskers})`,
        axes: { x: REQUEST_AXIS, y: { title: 'CPU per request / the better peer\'s', format: (value) => `${trimmed(value)}×`, scale: 'linear' } },
        series: cpuSeries,
        guides: [parity('the better peer')]
      }
    },
    ...comparisonBars.length === 0
      ? []
      : [{
          width: 360,
          panel: {
            kind: 'bars' as const,
            title: 'Other calls: CPU over the reference\'s',
            yTitle: 'CPU per call / the reference\'s',
            format: (value: number) => `${value.toFixed(2)}×`,
            groups: comparisonBars,
            guides: [parity('the reference')]
          }
        }]
  ])
  const rss = (name: string, side: SideName, x: number): Point | undefined => {
    const at = (level: number): number | undefined => find(results.rows, name, side, level)?.peakRssMiB ?? undefined
    const shown = at(concurrency)
    const all = results.concurrency.map(at).filter((value) => value !== undefined)
    return shown === undefined ? undefined : { x, y: shown, low: Math.min(...all), high: Math.max(...all) }
  }
  const memory = chart(`Peak resident memory against the request's size, ${whiskers}`, [{
    width: 600,
    panel: {
      kind: 'lines',
      title: `PodSet sync: peak RSS (${whiskers})`,
      axes: { x: REQUEST_AXIS, y: { title: 'peak RSS MiB', format: trimmed, scale: 'linear' } },
      series: podSetSeries(results, ['ours', 'ours, ETag', 'fastify peer', 'node:http peer'], rss),
      guides: [{ y: results.memoryLimitMiB, label: `the Deployment's memory limit, ${results.memoryLimitMiB} MiB` }]
    }
  }])
  return { [CHART_FILES.cpu]: cpu, [CHART_FILES.memory]: memory }
}

/** The page that says where a call's CPU goes, step by step, from docs/. */
const CALL_STEPS_PAGE = 'architecture.md#what-a-call-costs'

/** The columns of a case measured on this server and one reference: the load it was given, its latency, its CPU. */
function sideCells (row: Row | undefined, reference: Row | undefined): string[] {
  if (row === undefined) return ['–', '–', '–', '–', '–']
  return [rate(row.requestsPerSecond), ms(row.p50Ms), ms(row.p99Ms), row.serverCpuMsPerRequest === null ? '–' : row.serverCpuMsPerRequest.toFixed(3),
    reference === undefined || row === reference ? '' : times(ratio(row.serverCpuMsPerRequest, reference.serverCpuMsPerRequest))]
}

/** The page's section on the fixed cost of a call; none when the run did not measure it. */
function fixedCostSection (results: Results): string[] {
  const [ours, bare] = (['ours', 'fastify peer'] as const).map((side) => shownRow(results, FIXED_COST_CASE, side))
  if (ours === undefined) return []
  const body = results.bodies[FIXED_COST_CASE]
  return [
    '',
    '## The fixed cost of a call',
    '',
    `A PodSet sync with one pod${body === undefined ? '' : ` (${size(body.bytes)})`}, sent at 1,000 calls/s, evenly spaced, over up to ${ours.concurrency} connections, the pace of a busy ` +
      'Metacontroller: what a call costs around the controller\'s work, with each call mostly alone in the process. The bare fastify hook is ' +
      'the fastify peer: fastify\'s defaults, the same PodSet answer, and no validation, admission, ETag, log line or metric.',
    '',
    markdownTable(['side', 'calls/s', 'p50 ms', 'p99 ms', 'CPU ms per call', 'over the bare fastify hook'], ['left', 'right', 'right', 'right', 'right', 'right'], [
      ['this server', ...sideCells(ours, bare)],
      ['bare fastify hook', ...sideCells(bare, bare)]
    ])
  ]
}

/** The page's section on the replayed burst; none when the run did not replay it. */
function replaySection (results: Results): string[] {
  const { replay } = results
  const [ours, naive] = (['ours', 'naive hook'] as const).map((side) => shownRow(results, REPLAY_CASE, side))
  if (replay == null || ours === undefined) return []
  const { recording } = replay
  const check = (side: SideName): string[] => {
    const found = replay.checks[side]
    if (found === undefined) return ['–', '–']
    return [found.answersDiffering === 0 ? 'all' : `**${found.answersDiffering} differed**`,
      `${found.rowsMatched ? '' : '**not as expected:** '}${found.rowsFound.toLocaleString('en')} of ${found.rowsExpected.toLocaleString('en')}`]
  }
  const warmup = replay.warmupPasses ?? 1
  const processes = replay.processes ?? 1
  const firstPass = replay.firstPassCpuMsPerCall
  const firstPassCell = (side: SideName): string[] => firstPass === undefined ? [] : [firstPass[side]?.toFixed(3) ?? '–']
  const kinds = Object.entries(recording.kinds).map(([kind, count]) => `${count.toLocaleString('en')} ${kind}`).join(', ')
  return [
    '',
    '## A replayed burst of real Metacontroller calls',
    '',
    `\`${recording.file}\`: the ${recording.calls.toLocaleString('en')} hook calls a real Metacontroller ${recording.metacontroller} made to this server on ` +
      `kube-apiserver ${recording.kubernetes} (the end-to-end rig) on ${recording.recordedAt.slice(0, 10)}, over ${recording.seconds.toFixed(0)} s and at most ` +
      `${recording.maxInFlight} at once: ${burstWords(recording)}. By kind: ${kinds}. ` +
      '[bench/README.md](../bench/README.md#the-replayed-burst) says how it was recorded and how to record it again.',
    '',
    `Each side replays it in a database schema of its own, on ${processes === 1 ? 'a process of its own' : `${processes} processes of its own, one after another`}, ` +
      `${warmup === 1 ? 'once' : `${warmup} times`} to warm ${processes === 1 ? '' : 'each '}up and then ` +
      `${replay.passes === 1 ? 'once more' : `${replay.passes} times`}, measured${processes === 1 ? '' : ' and pooled'}, ` +
      'each pass on objects of its own (the recording\'s namespace and uids renamed), ' +
      `${replay.concurrency} calls in flight, each object's calls in their recorded order, as Metacontroller's workers take them. The naive hook answers ` +
      'what Metacontroller needs with one `INSERT … ON CONFLICT` per sync and one `DELETE` per finalize. This server\'s answers must say what the recorded ' +
      'ones said (the Ready condition\'s status and reason, `finalized`), the naive hook\'s Ready and finalized, and each side\'s rows at the end must be ' +
      'those of the objects left, with their last spec.' +
      (firstPass === undefined ? '' : ' The first pass, which a process just started pays while V8 compiles the code it reaches, is shown apart.'),
    '',
    markdownTable(['side', 'calls/s', 'p50 ms', 'p99 ms', 'CPU ms per call', 'over the naive hook', ...(firstPass === undefined ? [] : ['first pass: CPU ms per call']),
      'answers as expected', 'rows at the end'],
    ['left', 'right', 'right', 'right', 'right', 'right', ...(firstPass === undefined ? [] : ['right' as const]), 'right', 'right'], [
      ['this server', ...sideCells(ours, naive), ...firstPassCell('ours'), ...check('ours')],
      ['naive hook', ...sideCells(naive, naive), ...firstPassCell('naive hook'), ...check('naive hook')]
    ])
  ]
}

/**
 * docs/benchmarks.md: what a call costs, in a few sentences and the charts; then the targets, the table, the run's
 * machine and settings, and how to read them.
 */
export function benchmarkPage (results: Results): string {
  const { machine } = results
  const partial = [
    ...results.secondsPerRun < FULL_RUN_SECONDS ? [`${results.secondsPerRun} s per side and concurrency, under the ${FULL_RUN_SECONDS} s of a full run`] : [],
    ...results.cases === null ? [] : [`only the cases matching \`${results.cases}\``]
  ]
  const placement = typeof results.placement === 'string'
    ? results.placement
    : `every side alone on CPU ${results.placement.sides}; the load and PostgreSQL on CPU ${results.placement.load}`
  const verdict = { met: 'met', 'not met': '**not met**', 'not measured': 'not measured' }
  const charts = Object.keys(benchmarkCharts(results))
  return `${[
    '# Benchmarks',
    '',
    '<!-- Written by `npm run bench` from bench/results.json (bench/report.ts): run it again instead of editing this page. -->',
    '',
    ...partial.length === 0 ? [] : [`> **A quick look, not a full run:** ${partial.join('; ')}. Run \`npm run bench\` on a quiet machine before reading figures from this page.`, ''],
    ...summary(results),
    ...charts.includes(CHART_FILES.cpu) ? [`![CPU time per request over the better peer's against the request's size, and of the other calls over their reference's; 1.0 drawn](${CHART_FILES.cpu})`, ''] : [],
    `Measured by \`npm run bench\` on ${results.date.slice(0, 10)}, on ${machine.cpus} CPUs (${machine.cpu}), each side alone on one of them, ` +
      'against peers that compute the same answers: a minimal fastify hook and a `node:http` one. ' +
      'Runs on a shared or busy machine differ by more than some of the gaps below: compare sides within this run, not with another.',
    '',
    ...charts.includes(CHART_FILES.memory) ? [`![Peak resident memory against the request's size, for this server and its peers](${CHART_FILES.memory})`, ''] : [],
    `Where each part of a call's CPU goes, step by step: [what a call costs](${CALL_STEPS_PAGE}).`,
    '',
    '## Targets',
    '',
    markdownTable(['target', 'verdict', 'figures'], ['left', 'left', 'left'], results.targets.map((target) => [target.target, verdict[target.verdict], target.figure])),
    ...results.failures.length === 0 ? [] : ['', '**Failures** (the run exited 1):', '', ...results.failures.map((failure) => `- ${failure}`)],
    ...fixedCostSection(results),
    ...replaySection(results),
    ...createCostSection(results.createCosts),
    '',
    '## Results',
    '',
    markdownTable(HEADER, HEADER.map((_, column) => column < 2 ? 'left' : 'right'), cells(results.rows)),
    '',
    '## The run',
    '',
    `- **date**: ${results.date}`,
    `- **machine**: ${machine.cpu}, ${machine.cpus} CPUs, ${machine.memoryGiB} GiB of memory, ${machine.system}`,
    `- **Node.js**: ${results.node}`,
    `- **placement**: ${placement}`,
    `- **load**: ${results.secondsPerRun} s per side and concurrency${results.fixedCostSeconds === undefined ? '' : ` (the fixed cost: ${results.fixedCostSeconds} s)`}` +
      `${(results.processSets ?? 1) === 1 ? '' : `, over ${results.processSets} sets of processes`}, at concurrency ${results.concurrency.join(', ')}; ${results.cases === null ? 'every case' : `the cases matching \`${results.cases}\``}`,
    `- **requests**: ${Object.entries(results.bodies).map(([name, body]) => `${name} ${size(body.bytes)}`).join(', ')}`,
    `- **PostgreSQL**: fsync ${results.postgresFsync}; a pool of ${results.poolMax} connections`,
    `- **this server**: \`${serverCommand(results)}\`, as the Deployment runs it (memory limit ${results.memoryLimitMiB} MiB)`,
    `- **the whole run**: ${results.elapsedSeconds} s`,
    '',
    PAGE_LEGEND
  ].join('\n')}\n`
}

const PAGE_LEGEND = `## Reading the table

Each case but the replayed burst is one request, sent again and again: a PostgresWriter resync of an unchanged object
and a create of a new one, a composite's sync of a changed parent, and the fixed cost's 1-pod PodSet sync at 1,000
calls/s. Each case runs on sets of processes started for it, a process per side, one set after another (the run says
how many), and each side's figures are pooled over its processes: a process's figure moves from one process to the
next. The sides of a set alternate in slices so that each sees the same share of the machine.

| side | what it is |
|---|---|
| ours | this server, a request without \`If-None-Match\` (a changed parent: decoded, parsed, validated, answered) |
| ours, ETag | this server, the same request with the \`If-None-Match\` its first answer carried: an unchanged resync, answered 304 |
| fastify peer | the minimal fastify hook a person would write (\`bench/peers/\`): fastify's default parser, no schemas, no logger; the bare fastify hook of the fixed cost |
| node:http peer | \`node:http\` and \`JSON.parse\`, computing the same PodSet answer |
| receive floor | not a hook: a \`node:http\` server that receives the body of the 304's request and answers 304 without looking at it, the least any Node.js server spends on it |
| naive hook | the fastify peer's PostgresWriter hooks: an \`INSERT … ON CONFLICT\` on every sync, a \`DELETE\` on every finalize |
| pg loop | the statement with which this server writes a row, run straight on a \`pg\` pool of the same size: the limit of the database |

| column | meaning |
|---|---|
| conc | concurrent connections (pg loop: concurrent workers) |
| req/s | answered requests per second, from the first request sent to the last answer |
| p50 ms, p99 ms, max ms | latency as the client saw it |
| errors | unexpected statuses and socket errors; a row with any says FAILED |
| peak RSS MiB | the side's process's peak resident set during the row |
| CPU ms/req | the side's process's CPU time (all threads) per answered request: the steadiest figure on a busy machine |
| load CPU | the bench's own CPU time over the time it drove the row: near 100 % when the load, not the side, set the pace |
| vs peer | on this server's rows, same case and concurrency: req/s and CPU per request over the better peer's (PodSet: the higher req/s, the lower CPU of the fastify and node:http peers) and peak RSS over the larger peer's, or each over the fastify peer's (the fixed cost) or the naive hook's (PostgresWriter, the replayed burst) |

A missed target does not fail the bench: it measures, it does not test. How to run it, its options and profiling:
[bench/README.md](../bench/README.md).`
