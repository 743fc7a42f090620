import type { Measurement } from './load.js'

/** The benchmark's table and its verdict on each target (issue 12, and issue 10's memory limit). */

export type SideName = 'ours' | 'ours, ETag' | 'fastify peer' | 'node:http peer' | 'receive floor' | 'naive hook' | 'pg loop'

export interface Row extends Measurement {
  case: string
  side: SideName
  concurrency: number
  /** The side's process's peak resident set during this row; null for the pg loop, which runs in the bench. */
  peakRssMiB: number | null
  /** The side's process's CPU time (all threads, 10 ms ticks) over the requests it answered; null for the pg loop. */
  serverCpuMsPerRequest: number | null
  /**
   * The bench's own CPU time (autocannon, or the pg loop) over the time it drove this row: near 1 when the load, not
   * the side, set the pace (the bench runs on one CPU when the machine has two).
   */
  loadCpuShare: number | null
  /** For this server's rows: the peer its ratios are taken against (same case, same concurrency, same run). */
  reference: SideName | null
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
  /** The Deployment's memory limit. */
  memoryLimitMiB: number
}

const PEERS: SideName[] = ['fastify peer', 'node:http peer']
/** This server's processes: the one that answers changed requests, and the one that answers 304s. */
const OURS: SideName[] = ['ours', 'ours, ETag']
const ETAG_SIZES = ['PodSet 100 pods', 'PodSet 2,000 pods']

const times = (ratio: number | undefined): string => ratio === undefined || Number.isNaN(ratio) ? '–' : `${ratio.toFixed(2)}×`
const ms = (value: number): string => Number.isNaN(value) ? '–' : value.toFixed(2)
const rate = (value: number): string => value >= 100 ? value.toFixed(0) : value.toFixed(1)

function find (rows: readonly Row[], name: string, side: SideName, concurrency: number): Row | undefined {
  return rows.find((row) => row.case === name && row.side === side && row.concurrency === concurrency)
}

interface Ratios { requestsPerSecond: number | undefined, cpu: number | undefined, rss: number | undefined }

function ratio (a: number | null | undefined, b: number | null | undefined): number | undefined {
  return a === null || a === undefined || b === null || b === undefined || b === 0 ? undefined : a / b
}

/** A row of this server over its reference peer's row: requests/s, CPU per request, peak RSS. */
function ratiosToReference (rows: readonly Row[], row: Row): Ratios | undefined {
  const peer = row.reference === null ? undefined : find(rows, row.case, row.reference, row.concurrency)
  if (peer === undefined) return undefined
  return {
    requestsPerSecond: ratio(row.requestsPerSecond, peer.requestsPerSecond),
    cpu: ratio(row.serverCpuMsPerRequest, peer.serverCpuMsPerRequest),
    rss: ratio(row.peakRssMiB, peer.peakRssMiB)
  }
}

export function table (rows: readonly Row[]): string {
  const header = ['case', 'side', 'conc', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'peak RSS MiB', 'CPU ms/req', 'load CPU', 'vs peer: req/s', 'CPU', 'RSS']
  const lines = rows.map((row) => {
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
      ratios === undefined ? '' : `${times(ratios.requestsPerSecond)} ${row.reference === 'fastify peer' ? 'fastify' : 'naive'}`,
      ratios === undefined ? '' : times(ratios.cpu),
      ratios === undefined ? '' : times(ratios.rss)
    ]
  })
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column]?.length ?? 0)))
  const format = (cells: string[]): string => cells.map((cell, column) => column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)).join('  ')
  return [format(header), format(widths.map((width) => '-'.repeat(width))), ...lines.map(format)].join('\n')
}

interface Check { label: string, value: number | undefined, met: (value: number) => boolean, show: (value: number) => string }

function verdict (target: string, checks: Check[]): Target {
  const measured = checks.filter((check) => check.value !== undefined && !Number.isNaN(check.value))
  if (measured.length === 0) return { target, verdict: 'not measured', figure: 'no such case in this run' }
  return {
    target,
    verdict: measured.length === checks.length && measured.every((check) => check.met(check.value as number)) ? 'met' : 'not met',
    figure: checks.map((check) => `${check.label} ${check.value === undefined || Number.isNaN(check.value) ? 'not measured' : check.show(check.value)}`).join(', ')
  }
}

/** One check per row of `side` in the cases named, at every concurrency measured. */
function perRow (rows: readonly Row[], cases: (name: string) => boolean, side: SideName, value: (row: Row) => number | undefined, met: (value: number) => boolean, show: (value: number, row: Row) => string): Check[] {
  return rows.filter((row) => row.side === side && cases(row.case)).map((row) => ({ label: `${row.case} @${row.concurrency}`, value: value(row), met, show: (measured) => show(measured, row) }))
}

const peerRows = (rows: readonly Row[], row: Row): Row[] => PEERS.map((peer) => find(rows, row.case, peer, row.concurrency)).filter((peer) => peer !== undefined)

export function targets (facts: RunFacts): Target[] {
  const { rows } = facts
  const podSet = (name: string): boolean => name.startsWith('PodSet')
  /** The best of the values present: the lowest with `Math.min`, the highest with `Math.max`. */
  const bestOf = (values: Array<number | null>, pick: (...values: number[]) => number): number | undefined => {
    const present = values.filter((value): value is number => value !== null)
    return present.length === 0 ? undefined : pick(...present)
  }
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
  return [
    verdict('Changed requests: server CPU per request <= 1.0x the minimal fastify hook\'s (PodSet 10, 100 and 2,000 pods)',
      perRow(rows, podSet, 'ours', (row) => ratiosToReference(rows, row)?.cpu, (r) => r <= 1.0, times)),
    verdict('Peak RSS <= the peers\' (the smaller of fastify\'s and node:http\'s) at every size and concurrency',
      perRow(rows, podSet, 'ours', (row) => ratio(row.peakRssMiB, bestOf(peerRows(rows, row).map((peer) => peer.peakRssMiB), Math.min)), (r) => r <= 1.0, times)),
    verdict(`Peak RSS under the Deployment's memory limit (${facts.memoryLimitMiB} MiB) over the whole run`, [{
      label: 'this server',
      value: bestOf(OURS.map((side) => facts.wholeRunPeakRssMiB[side] ?? null), Math.max),
      met: (peak) => peak < facts.memoryLimitMiB,
      show: (peak) => `${peak.toFixed(0)} MiB (peers: ${PEERS.map((peer) => `${peer} ${facts.wholeRunPeakRssMiB[peer]?.toFixed(0) ?? '–'} MiB`).join(', ')})`
    }]),
    verdict('Unchanged resync with its ETag: >= 10x the peers\' requests/s (PodSet 100 and 2,000 pods)',
      perRow(rows, (name) => ETAG_SIZES.includes(name), 'ours', (row) => etagOverPeers(row, 'ours, ETag', 'requestsPerSecond'), (r) => r >= 10, withFloor('requestsPerSecond'))),
    verdict('Unchanged resync with its ETag: <= 1/10 of the peers\' CPU per request (PodSet 100 and 2,000 pods)',
      perRow(rows, (name) => ETAG_SIZES.includes(name), 'ours', (row) => etagOverPeers(row, 'ours, ETag', 'serverCpuMsPerRequest'), (r) => r <= 0.1, withFloor('serverCpuMsPerRequest'))),
    verdict('PostgresWriter unchanged resync: >= 0.9x the naive hook\'s requests/s on the same database',
      perRow(rows, (name) => name === 'PostgresWriter unchanged resync', 'ours', (row) => ratiosToReference(rows, row)?.requestsPerSecond, (r) => r >= 0.9, times)),
    verdict('PostgresWriter create: >= 0.8x the naive hook\'s requests/s on the same database',
      perRow(rows, (name) => name === 'PostgresWriter create', 'ours', (row) => ratiosToReference(rows, row)?.requestsPerSecond, (r) => r >= 0.8, times)),
    {
      target: 'PostgresWriter unchanged resync: zero row writes (pg_stat_user_tables)',
      verdict: facts.resync.hookRequests === 0 ? 'not measured' : facts.resync.rowWrites === 0 ? 'met' : 'not met',
      figure: `${facts.resync.rowWrites} row writes over ${facts.resync.hookRequests.toLocaleString('en')} hook resyncs and ${facts.resync.loopQueries.toLocaleString('en')} pg loop statements`
    }
  ]
}

export function targetLines (list: readonly Target[]): string {
  const label = { met: 'met         ', 'not met': 'NOT MET     ', 'not measured': 'not measured' }
  return list.map((t) => `${label[t.verdict]}  ${t.target}: ${t.figure}`).join('\n')
}
