import type { Measurement } from './load.js'

/** The benchmark's table and its verdict on each target of issue 5. */

export type Kind = 'hook' | 'parse-only' | 'pg loop'

export interface Row extends Measurement {
  case: string
  kind: Kind
  concurrency: number
  /** The hook server's peak resident set during this run; null for the pg loop, which runs without it. */
  peakRssMiB: number | null
  /** The hook server's CPU time (all threads, 10 ms ticks) over the requests it answered; null for the pg loop. */
  serverCpuMsPerRequest: number | null
  /** A hook's requests/s over its baseline's (parse-only, or the pg loop) in the same run at the same concurrency. */
  ratioToBaseline: number | null
  /** Any non-2xx answer, socket error or failed body check. */
  failed: boolean
}

export interface Target {
  target: string
  verdict: 'met' | 'not met' | 'not measured'
  figure: string
}

export interface RunFacts {
  rows: Row[]
  compositeCases: string[]
  /** The unchanged resyncs, hook and pg loop, and the row writes (n_tup_ins + n_tup_upd + n_tup_del) they caused. */
  resync: { rowWrites: number, hookRequests: number, loopQueries: number }
  wholeRunPeakRssMiB: number
  startupPeakRssMiB: number
}

const LARGE_PODSET = 'PodSet 2,000 pods'

const percent = (ratio: number | null): string => ratio === null ? '–' : `${Math.round(ratio * 100)}%`
const ms = (value: number): string => Number.isNaN(value) ? '–' : value.toFixed(2)
const rate = (value: number): string => value >= 100 ? value.toFixed(0) : value.toFixed(1)

export function table (rows: readonly Row[]): string {
  const header = ['case', 'baseline', 'conc', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors', 'peak RSS MiB', 'server CPU ms/req', 'vs baseline']
  const lines = rows.map((row) => [
    row.case,
    row.kind === 'hook' ? '' : row.kind,
    String(row.concurrency),
    rate(row.requestsPerSecond),
    ms(row.p50Ms),
    ms(row.p99Ms),
    ms(row.maxMs),
    String(row.non2xx),
    String(row.errors),
    row.peakRssMiB === null ? '–' : row.peakRssMiB.toFixed(0),
    row.serverCpuMsPerRequest === null ? '–' : row.serverCpuMsPerRequest.toFixed(3),
    `${percent(row.ratioToBaseline)}${row.failed ? ' FAILED' : ''}`
  ])
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column]?.length ?? 0)))
  const format = (cells: string[]): string => cells.map((cell, column) => column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)).join('  ')
  return [format(header), format(widths.map((width) => '-'.repeat(width))), ...lines.map(format)].join('\n')
}

function find (rows: readonly Row[], name: string, kind: Kind, concurrency: number): Row | undefined {
  return rows.find((row) => row.case === name && row.kind === kind && row.concurrency === concurrency)
}

function verdict (target: string, checks: Array<{ label: string, value: number | undefined, met: (value: number) => boolean, show: (value: number) => string }>): Target {
  const measured = checks.filter((check) => check.value !== undefined && !Number.isNaN(check.value))
  if (measured.length === 0) return { target, verdict: 'not measured', figure: 'no such case in this run' }
  return {
    target,
    verdict: measured.length === checks.length && measured.every((check) => check.met(check.value as number)) ? 'met' : 'not met',
    figure: checks.map((check) => `${check.label} ${check.value === undefined || Number.isNaN(check.value) ? 'not measured' : check.show(check.value)}`).join(', ')
  }
}

export function targets (facts: RunFacts): Target[] {
  const { rows } = facts
  const hookRows = rows.filter((row) => row.kind === 'hook')
  const postgresWriterCases = [...new Set(rows.filter((row) => row.kind === 'pg loop').map((row) => row.case))]
  return [
    verdict('Composite steady state: >= 70% of the parse-only baseline\'s requests/s at concurrency 16',
      facts.compositeCases.map((name) => ({
        label: name,
        value: find(rows, name, 'hook', 16)?.ratioToBaseline ?? undefined,
        met: (ratio) => ratio >= 0.7,
        show: percent
      }))),
    verdict('Composite steady state: p99 < 10 ms at concurrency 16 (PodSet 2,000 pods has its own bound)',
      facts.compositeCases.filter((name) => name !== LARGE_PODSET).map((name) => ({
        label: name,
        value: find(rows, name, 'hook', 16)?.p99Ms,
        met: (p99) => p99 < 10,
        show: (p99) => `${ms(p99)} ms`
      }))),
    verdict('PodSet 2,000 pods: p99 < 100 ms (concurrency 1: one sync at a time, as one parent is synced)', [{
      label: LARGE_PODSET,
      value: find(rows, LARGE_PODSET, 'hook', 1)?.p99Ms,
      met: (p99) => p99 < 100,
      show: (p99) => `${ms(p99)} ms`
    }]),
    verdict('PostgresWriter sync: >= 80% of the plain pg loop\'s requests/s at the same concurrency',
      postgresWriterCases.flatMap((name) => hookRows.filter((row) => row.case === name).map((row) => ({
        label: `${name} @${row.concurrency}`,
        value: row.ratioToBaseline ?? undefined,
        met: (ratio) => ratio >= 0.8,
        show: percent
      })))),
    {
      target: 'PostgresWriter unchanged resync: zero row writes (pg_stat_user_tables)',
      verdict: facts.resync.hookRequests === 0 ? 'not measured' : facts.resync.rowWrites === 0 ? 'met' : 'not met',
      figure: `${facts.resync.rowWrites} row writes over ${facts.resync.hookRequests.toLocaleString('en')} hook resyncs and ${facts.resync.loopQueries.toLocaleString('en')} pg loop statements`
    },
    {
      target: 'Peak RSS of the hook server over the whole run < 200 MiB',
      verdict: facts.wholeRunPeakRssMiB < 200 ? 'met' : 'not met',
      figure: `${facts.wholeRunPeakRssMiB.toFixed(0)} MiB (${facts.startupPeakRssMiB.toFixed(0)} MiB at start-up; ${peakRssByCase(rows)})`
    }
  ]
}

/** The highest peak of each case, to show which one sets the whole run's. */
function peakRssByCase (rows: readonly Row[]): string {
  const peaks = new Map<string, number>()
  for (const row of rows) {
    if (row.peakRssMiB !== null) peaks.set(row.case, Math.max(peaks.get(row.case) ?? 0, row.peakRssMiB))
  }
  return [...peaks].map(([name, peak]) => `${name} ${peak.toFixed(0)}`).join(', ')
}

export function targetLines (list: readonly Target[]): string {
  const label = { met: 'met         ', 'not met': 'NOT MET     ', 'not measured': 'not measured' }
  return list.map((t) => `${label[t.verdict]}  ${t.target}: ${t.figure}`).join('\n')
}
