import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { benchmarkPage, createCostLines, FULL_RUN_SECONDS, targets, type Results, type Row, type SideName, type Target } from '../../bench/report.js'

/** The verdicts of the bench (bench/report.ts), from rows as a run records them, and the page made from a run's results. */

/** What a row holds beside the figures a test sets. */
const measured = { requests: 1000, seconds: 1, p50Ms: 1, p99Ms: 2, maxMs: 3, unexpectedStatus: 0, errors: 0, loadCpuShare: 0.2, failed: false }

function row (name: string, side: SideName, concurrency: number, requestsPerSecond: number, serverCpuMsPerRequest: number | null, peakRssMiB: number | null, reference: SideName | null = null): Row {
  return { ...measured, case: name, side, concurrency, requestsPerSecond, serverCpuMsPerRequest, peakRssMiB, reference }
}

function verdictOf (list: Target[], start: string): Target {
  const found = list.find((target) => target.target.startsWith(start))
  assert.ok(found, `a target starting "${start}"`)
  return found
}

const noResyncs = { rowWrites: 0, hookRequests: 0, loopQueries: 0 }

test('a run without this server\'s processes leaves every target not measured, the memory limit included', () => {
  const list = targets({ rows: [], resync: noResyncs, wholeRunPeakRssMiB: {}, memoryLimitMiB: 768 })
  assert.deepEqual(list.filter((target) => target.verdict !== 'not measured').map((target) => target.target), [])
})

test('each target compares this server with its reference in the same case and concurrency, and says met or not met', () => {
  const podSet = 'PodSet 100 pods'
  const resync = 'PostgresWriter unchanged resync'
  const rows = [
    row(podSet, 'ours', 1, 1000, 0.9, 95, 'fastify peer'),
    row(podSet, 'ours, ETag', 1, 12_000, 0.12, 80),
    row(podSet, 'fastify peer', 1, 900, 1.0, 100),
    row(podSet, 'node:http peer', 1, 1100, 0.95, 85),
    row(resync, 'ours', 5, 850, 0.2, 100, 'naive hook'),
    row(resync, 'naive hook', 5, 1000, 0.15, 80)
  ]
  const list = targets({ rows, resync: { rowWrites: 0, hookRequests: 5000, loopQueries: 100 }, wholeRunPeakRssMiB: { ours: 200, 'ours, ETag': 210, 'fastify peer': 400 }, memoryLimitMiB: 768 })
  assert.equal(verdictOf(list, 'Changed requests').verdict, 'met', '0.9 ms against fastify\'s 1.0')
  assert.equal(verdictOf(list, 'Peak RSS <=').verdict, 'met', '95 MiB against the larger peer\'s, fastify\'s 100 (node:http\'s 85)')
  assert.equal(verdictOf(list, 'Peak RSS under').verdict, 'met')
  assert.match(verdictOf(list, 'Peak RSS under').figure, /^this server 210 MiB/)
  assert.equal(verdictOf(list, 'Unchanged resync with its ETag: >= 10x').verdict, 'met', '12,000 req/s against the better peer\'s 1,100')
  assert.equal(verdictOf(list, 'Unchanged resync with its ETag: <= 1/10').verdict, 'not met', '0.12 ms against the better peer\'s 0.95')
  assert.equal(verdictOf(list, 'PostgresWriter unchanged resync: >= 0.9x').verdict, 'not met', '0.85× the naive hook')
  assert.equal(verdictOf(list, 'PostgresWriter create').verdict, 'not measured')
  assert.equal(verdictOf(list, 'PostgresWriter unchanged resync: zero').verdict, 'met')
})

/** A run's results as bench/results.json holds them: through JSON, where a NaN figure becomes null. */
function resultsOf (rows: Row[], overrides: Partial<Results> = {}): Results {
  const facts = { rows, resync: { rowWrites: 0, hookRequests: 5000, loopQueries: 100 }, wholeRunPeakRssMiB: { ours: 200 }, memoryLimitMiB: 768 }
  const results: Results = {
    date: '2026-11-20T09:30:00.000Z',
    machine: { cpu: 'Example CPU @ 2.00GHz', cpus: 2, memoryGiB: 8, system: 'Linux 6.1.0 x64' },
    node: 'v20.20.2',
    placement: { sides: '1', load: '0' },
    secondsPerRun: FULL_RUN_SECONDS,
    cases: null,
    concurrency: [1, 5, 16],
    poolMax: 10,
    postgresFsync: 'on',
    nodeArgs: ['--max-old-space-size=256'],
    elapsedSeconds: 270,
    ...facts,
    targets: targets(facts),
    failures: [],
    ...overrides
  }
  return JSON.parse(JSON.stringify(results)) as Results
}

const pageRows = [
  row('PodSet 100 pods', 'ours', 1, 1000, 0.9, 90, 'fastify peer'),
  row('PodSet 100 pods', 'fastify peer', 1, 900, 1.0, 100),
  { ...row('PodSet 2,000 pods', 'ours', 16, 0, null, 150), p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN, failed: true, errors: 3 }
]

test('the benchmark page holds the run\'s date, machine and settings, its targets and its table', () => {
  const page = benchmarkPage(resultsOf(pageRows))
  assert.match(page, /^# Benchmarks\n\n<!-- Written by `npm run bench` from bench\/results.json/)
  assert.match(page, /as `npm run bench` measured it on 2026-11-20\./)
  assert.match(page, /^- \*\*machine\*\*: Example CPU @ 2\.00GHz, 2 CPUs, 8 GiB of memory, Linux 6\.1\.0 x64$/m)
  assert.match(page, /^- \*\*this server\*\*: `node --max-old-space-size=256 dist\/server\.js`, as the Deployment runs it \(memory limit 768 MiB\)$/m)
  assert.match(page, /^\| Changed requests: server CPU per request <= 1\.0x the minimal fastify hook's \(PodSet 10, 100 and 2,000 pods\) \| \*\*not met\*\* \| PodSet 100 pods @1 0\.90×, PodSet 2,000 pods @16 not measured \|$/m)
  assert.match(page, /^\| PodSet 100 pods \| ours \| 1 \| 1000 \| 1\.00 \| 2\.00 \| 3\.00 \| 0 \| 90 \| 0\.900 \| 20 % \| 1\.11× fastify \| 0\.90× \| 0\.90× \|$/m)
  assert.match(page, /^\| PodSet 2,000 pods \| ours \| 16 \| 0\.0 \| – \| – \| – \| 3 FAILED \| 150 \| – \| 20 % \| {2}\| {2}\| {2}\|$/m, 'figures no request gave are dashes')
  assert.doesNotMatch(page, /quick look/)
  assert.ok(page.endsWith('\n') && !page.endsWith('\n\n'))
})

test('the page says what a PostgresWriter create costs in round trips and statements, when the run counted it', () => {
  const createCosts = { ours: { roundTrips: 1, statements: 2 }, naiveHook: { roundTrips: 1, statements: 1 } }
  const page = benchmarkPage(resultsOf(pageRows, { createCosts }))
  assert.match(page, /^## What a PostgresWriter create costs in PostgreSQL$/m)
  assert.match(page, /^\| ours \| 1 \| 2 \| .*tombstone.* \|$/m)
  assert.match(page, /^\| naive hook \| 1 \| 1 \| .* \|$/m)
  assert.equal(createCostLines(createCosts), 'PostgresWriter create, per create: this server 2 statements in 1 round trip(s), the naive hook 1 in 1')
  for (const uncounted of [null, undefined]) assert.doesNotMatch(benchmarkPage(resultsOf(pageRows, { createCosts: uncounted })), /What a PostgresWriter create costs/)
})

test('a run of short slices, or of some cases only, is marked as a quick look at the top of its page', () => {
  const short = benchmarkPage(resultsOf(pageRows, { secondsPerRun: 1, cases: 'PodSet' }))
  assert.match(short.split('## The run')[0] ?? '', new RegExp(`^> \\*\\*A quick look, not a full run:\\*\\* 1 s per side and concurrency, under the ${FULL_RUN_SECONDS} s of a full run; only the cases matching \`PodSet\`\\.`, 'm'))
  assert.match(benchmarkPage(resultsOf(pageRows, { cases: 'pulsar' })), /^> \*\*A quick look, not a full run:\*\* only the cases matching `pulsar`\./m)
})

test('docs/benchmarks.md is committed with the bench/results.json it was made from, and is what the generator makes of it', () => {
  const root = join(import.meta.dirname, '..', '..')
  const [page, results] = [join(root, 'docs', 'benchmarks.md'), join(root, 'bench', 'results.json')]
  assert.equal(existsSync(page), existsSync(results), 'both or neither: `npm run bench` writes them together')
  if (!existsSync(page)) return
  assert.equal(readFileSync(page, 'utf8'), benchmarkPage(JSON.parse(readFileSync(results, 'utf8')) as Results), 'run `npm run bench` again rather than editing docs/benchmarks.md')
})
