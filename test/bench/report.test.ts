import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { powers } from '../../bench/charts.js'
import { benchmarkCharts, benchmarkPage, CHART_FILES, createCostLines, duration, FIXED_COST_CASE, FULL_RUN_SECONDS, REPLAY_CASE, targets, type Reference, type Results, type Row, type SideName, type Target } from '../../bench/report.js'

/** The verdicts of the bench (bench/report.ts), from rows as a run records them, and the page made from a run's results. */

/** What a row holds beside the figures a test sets. */
const measured = { requests: 1000, seconds: 1, p50Ms: 1, p99Ms: 2, maxMs: 3, unexpectedStatus: 0, errors: 0, loadCpuShare: 0.2, failed: false }

function row (name: string, side: SideName, concurrency: number, requestsPerSecond: number, serverCpuMsPerRequest: number | null, peakRssMiB: number | null, reference: Reference | null = null): Row {
  return { ...measured, case: name, side, concurrency, requestsPerSecond, serverCpuMsPerRequest, peakRssMiB, reference }
}

function verdictOf (list: Target[], start: string): Target {
  const found = list.find((target) => target.target.startsWith(start))
  assert.ok(found, `a target starting "${start}"`)
  return found
}

const noResyncs = { rowWrites: 0, hookRequests: 0, loopQueries: 0 }

test('a run without this server\'s processes leaves every target not measured, the memory limit included', () => {
  const list = targets({ rows: [], resync: noResyncs, wholeRunPeakRssMiB: {}, readyRssMiB: {}, memoryLimitMiB: 768 })
  assert.deepEqual(list.filter((target) => target.verdict !== 'not measured').map((target) => target.target), [])
})

test('each target compares this server with its reference in the same case and concurrency, and says met or not met', () => {
  const podSet = 'PodSet 100 pods'
  const resync = 'PostgresWriter unchanged resync'
  const rows = [
    row(FIXED_COST_CASE, 'ours', 5, 1000, 0.45, 90, 'fastify peer'),
    row(FIXED_COST_CASE, 'fastify peer', 5, 1000, 0.35, 70),
    row('PodSet 10 pods', 'ours', 1, 1000, 0.99, 95, 'peers'),
    row('PodSet 10 pods', 'fastify peer', 1, 900, 1.0, 100),
    row('PodSet 10 pods', 'node:http peer', 1, 1100, 0.8, 85),
    row(podSet, 'ours', 1, 1000, 0.85, 95, 'peers'),
    row(podSet, 'ours, ETag', 1, 12_000, 0.12, 80),
    row(podSet, 'fastify peer', 1, 900, 1.0, 100),
    row(podSet, 'node:http peer', 1, 1100, 0.95, 85),
    row(resync, 'ours', 5, 850, 0.2, 100, 'naive hook'),
    row(resync, 'naive hook', 5, 1000, 0.15, 80),
    row(REPLAY_CASE, 'ours', 5, 900, 1.3, 110, 'naive hook'),
    row(REPLAY_CASE, 'naive hook', 5, 1000, 1.0, 80)
  ]
  const list = targets({ rows, resync: { rowWrites: 0, hookRequests: 5000, loopQueries: 100 }, wholeRunPeakRssMiB: { ours: 200, 'ours, ETag': 210, 'fastify peer': 400 }, readyRssMiB: { ours: 78, 'ours, ETag': 79, 'fastify peer': 70, 'node:http peer': 45 }, memoryLimitMiB: 768 })
  assert.equal(verdictOf(list, 'Fixed cost').verdict, 'not met', '0.45 ms against the bare fastify hook\'s 0.35: 1.29×')
  assert.match(verdictOf(list, 'Fixed cost').figure, /@5 1\.29× \(0\.45 against 0\.35 ms\)$/)
  assert.equal(verdictOf(list, 'Changed requests:').verdict, 'met', 'at most the fastify peer\'s at 10 and 100 pods, though above node:http\'s at 10')
  assert.equal(verdictOf(list, 'Changed requests from 100 pods up').verdict, 'met', '0.85 ms against the better peer\'s, node:http\'s 0.95: 0.89×; 10 pods not counted')
  assert.doesNotMatch(verdictOf(list, 'Changed requests from 100 pods up').figure, /10 pods/)
  assert.equal(verdictOf(list, 'RSS once started').verdict, 'met', '79 MiB against the fastify peer\'s 70: +9 MiB')
  assert.match(verdictOf(list, 'RSS once started').figure, /^this server 79 MiB, \+9 MiB over the fastify peer's \(fastify peer 70 MiB, node:http peer 45 MiB\)$/)
  assert.equal(verdictOf(list, 'Peak RSS from 100 pods up').verdict, 'met', '95 MiB against the larger peer\'s, fastify\'s 100 (node:http\'s 85)')
  assert.equal(verdictOf(list, 'Peak RSS under').verdict, 'met')
  assert.match(verdictOf(list, 'Peak RSS under').figure, /^this server 210 MiB/)
  assert.equal(verdictOf(list, 'Unchanged resync with its ETag: >= 10x').verdict, 'met', '12,000 req/s against the better peer\'s 1,100')
  assert.equal(verdictOf(list, 'Unchanged resync with its ETag: <= 1/10').verdict, 'not met', '0.12 ms against the better peer\'s 0.95')
  assert.equal(verdictOf(list, 'PostgresWriter unchanged resync: >= 0.9x').verdict, 'not met', '0.85× the naive hook')
  assert.equal(verdictOf(list, 'PostgresWriter create').verdict, 'not measured')
  assert.equal(verdictOf(list, 'Replayed burst').verdict, 'not met', '1.3 ms a call against the naive hook\'s 1.0')
  assert.equal(verdictOf(list, 'PostgresWriter unchanged resync: zero').verdict, 'met')
})

test('the RSS once started is taken from this server\'s larger process, and is not measured without the fastify peer\'s', () => {
  const facts = { rows: [], resync: noResyncs, wholeRunPeakRssMiB: {}, memoryLimitMiB: 768 }
  assert.equal(verdictOf(targets({ ...facts, readyRssMiB: { ours: 78, 'ours, ETag': 81, 'fastify peer': 70 } }), 'RSS once started').verdict, 'not met', '81 MiB is 11 over')
  assert.equal(verdictOf(targets({ ...facts, readyRssMiB: { ours: 78 } }), 'RSS once started').verdict, 'not measured')
})

/** A run's results as bench/results.json holds them: through JSON, where a NaN figure becomes null. */
function resultsOf (rows: Row[], overrides: Partial<Results> = {}): Results {
  const facts = { rows, resync: { rowWrites: 0, hookRequests: 5000, loopQueries: 100 }, wholeRunPeakRssMiB: { ours: 200 }, readyRssMiB: { ours: 90 }, memoryLimitMiB: 768 }
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
    bodies: {
      'PodSet 10 pods': { bytes: 57_000, children: 10 },
      'PodSet 100 pods': { bytes: 556_000, children: 100 },
      'PodSet 2,000 pods': { bytes: 11_100_000, children: 2000 },
      'PostgresWriter create': { bytes: 2100, children: 0 }
    },
    ...facts,
    targets: targets(facts),
    failures: [],
    ...overrides
  }
  return JSON.parse(JSON.stringify(results)) as Results
}

const pageRows = [
  row('PodSet 100 pods', 'ours', 1, 1000, 0.9, 90, 'peers'),
  row('PodSet 100 pods', 'fastify peer', 1, 900, 1.0, 100),
  { ...row('PodSet 2,000 pods', 'ours', 16, 0, null, 150), p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN, failed: true, errors: 3 }
]

test('the benchmark page holds the run\'s date, machine and settings, its targets and its table', () => {
  const page = benchmarkPage(resultsOf(pageRows))
  assert.match(page, /^# Benchmarks\n\n<!-- Written by `npm run bench` from bench\/results.json/)
  assert.match(page, /^Measured by `npm run bench` on 2026-11-20, on 2 CPUs \(Example CPU @ 2\.00GHz\)/m)
  assert.match(page, /^- \*\*machine\*\*: Example CPU @ 2\.00GHz, 2 CPUs, 8 GiB of memory, Linux 6\.1\.0 x64$/m)
  assert.match(page, /^- \*\*this server\*\*: `node --max-old-space-size=256 dist\/server\.js`, as the Deployment runs it \(memory limit 768 MiB\)$/m)
  assert.match(page, /^\| Changed requests from 100 pods up: server CPU per request <= 0\.9x the better peer's .* \| \*\*not met\*\* \| PodSet 100 pods @1 0\.90×, PodSet 2,000 pods @16 not measured \|$/m)
  assert.match(page, /^\| PodSet 100 pods \| ours \| 1 \| 1000 \| 1\.00 \| 2\.00 \| 3\.00 \| 0 \| 90 \| 0\.900 \| 20 % \| 1\.11× peers \| 0\.90× \| 0\.90× \|$/m)
  assert.match(page, /^\| PodSet 2,000 pods \| ours \| 16 \| 0\.0 \| – \| – \| – \| 3 FAILED \| 150 \| – \| 20 % \| {2}\| {2}\| {2}\|$/m, 'figures no request gave are dashes')
  assert.doesNotMatch(page, /quick look/)
  assert.ok(page.endsWith('\n') && !page.endsWith('\n\n'))
  const withEnvironment = benchmarkPage(resultsOf(pageRows, { runtimeEnv: { MALLOC_ARENA_MAX: '1' } }))
  assert.match(withEnvironment, /^- \*\*this server\*\*: `MALLOC_ARENA_MAX=1 node --max-old-space-size=256 dist\/server\.js`, as the Deployment runs it/m)
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

test('the page says over how many sets of processes each case ran, when it ran on more than one', () => {
  assert.match(benchmarkPage(resultsOf(pageRows, { processSets: 3 })), /^- \*\*load\*\*: \d+ s per side and concurrency, over 3 sets of processes, at concurrency /m)
  for (const single of [1, undefined]) assert.match(benchmarkPage(resultsOf(pageRows, { processSets: single })), /^- \*\*load\*\*: \d+ s per side and concurrency, at concurrency /m)
})

test('the page says how long the fixed cost ran, when the run gave it a length of its own', () => {
  assert.match(benchmarkPage(resultsOf(pageRows, { fixedCostSeconds: 40 })), /^- \*\*load\*\*: \d+ s per side and concurrency \(the fixed cost: 40 s\), /m)
  assert.doesNotMatch(benchmarkPage(resultsOf(pageRows, { fixedCostSeconds: undefined })), /the fixed cost: /)
})

test('a run of short slices, or of some cases only, is marked as a quick look at the top of its page', () => {
  const short = benchmarkPage(resultsOf(pageRows, { secondsPerRun: 1, cases: 'PodSet' }))
  assert.match(short.split('## Targets')[0] ?? '', new RegExp(`^> \\*\\*A quick look, not a full run:\\*\\* 1 s per side and concurrency, under the ${FULL_RUN_SECONDS} s of a full run; only the cases matching \`PodSet\`\\.`, 'm'))
  assert.match(benchmarkPage(resultsOf(pageRows, { cases: 'pulsar' })), /^> \*\*A quick look, not a full run:\*\* only the cases matching `pulsar`\./m)
})

/** Every side of the PodSet cases at every concurrency, CPU per request growing with the pods, and PostgresWriter's sides. */
function fullRows (): Row[] {
  const sides: Array<[SideName, number, number]> = [['ours', 0.04, 60], ['ours, ETag', 0.004, 50], ['fastify peer', 0.05, 40], ['node:http peer', 0.045, 30], ['receive floor', 0.003, 35]]
  const rows: Row[] = []
  for (const [name, pods] of [['PodSet 10 pods', 10], ['PodSet 100 pods', 100], ['PodSet 2,000 pods', 2000]] as const) {
    for (const concurrency of [1, 5, 16]) {
      for (const [side, perPod, rss] of sides) {
        rows.push(row(name, side, concurrency, 1000 / pods, 0.2 + perPod * pods * (concurrency === 5 ? 1 : 1.1), rss + pods / 10, side === 'ours' ? 'peers' : null))
      }
    }
  }
  for (const name of ['PostgresWriter unchanged resync', 'PostgresWriter create']) {
    for (const concurrency of [1, 5, 16]) rows.push(row(name, 'ours', concurrency, 3000, 0.25, 100, 'naive hook'), row(name, 'naive hook', concurrency, 3000, 0.2, 80))
  }
  return rows
}

test('the page opens with what a call costs, per call and per object, against the peers, and the charts', () => {
  const page = benchmarkPage(resultsOf(fullRows()))
  const opening = page.split('## Targets')[0] ?? ''
  // At concurrency 5: 0.2 + 0.04 ms per pod (ours), 0.2 + 0.045 (node:http, the better peer).
  assert.match(opening, /A changed sync costs this server \*\*0\.60 ms of CPU with 10 objects in the request, and 40 µs more per further object\*\* \(the better of two minimal peers: 0\.65 ms and 45 µs\)/)
  assert.match(opening, /a PodSet sync took 0\.60 ms with 10 pods \(56 KiB\), 4\.2 ms with 100 pods \(543 KiB\), 80 ms with 2,000 pods \(10\.6 MiB\)\./)
  assert.match(opening, /answered 304 unparsed, for 0\.24 ms, 0\.60 ms, 8\.2 ms at those sizes/)
  assert.match(opening, /A PostgresWriter sync costs 0\.25 ms when its object is unchanged and 0\.25 ms when it is new \(a naive hook that writes the row on every call: 0\.20 ms and 0\.20 ms\)/)
  assert.match(opening, new RegExp(`!\\[CPU time per request[^\\]]*\\]\\(${CHART_FILES.cpu}\\)`))
  assert.match(opening, new RegExp(`!\\[Peak resident memory[^\\]]*\\]\\(${CHART_FILES.memory}\\)`))
  assert.ok(page.indexOf('## Targets') < page.indexOf('## Results'), 'then the targets, then the table')
})

/** A replay of a recorded burst as a run sums it up. */
const replaySummary = {
  recording: { file: 'bench/recordings/postgres-writer-burst.jsonl.gz', metacontroller: 'v4.17.2', kubernetes: 'v1.36.3', recordedAt: '2026-12-02T07:00:00.000Z', objects: 300, deleted: 200, calls: 1400, kinds: { create: 300, update: 300, resync: 600, finalize: 200 }, maxInFlight: 5, seconds: 61.4 },
  concurrency: 5,
  passes: 2,
  checks: {
    ours: { answersDiffering: 0, rowsExpected: 300, rowsFound: 300, rowsMatched: true },
    'naive hook': { answersDiffering: 2, rowsExpected: 300, rowsFound: 299, rowsMatched: false }
  }
}

test('the page opens with the fixed cost of a call and the replayed burst, each beside its reference, and has a section for each', () => {
  const rows = [
    ...fullRows(),
    row(FIXED_COST_CASE, 'ours', 5, 1000, 0.45, 90, 'fastify peer'),
    row(FIXED_COST_CASE, 'fastify peer', 5, 1000, 0.36, 70),
    row(REPLAY_CASE, 'ours', 5, 900, 1.2, 110, 'naive hook'),
    row(REPLAY_CASE, 'naive hook', 5, 1000, 1.0, 80)
  ]
  const results = resultsOf(rows, { replay: replaySummary })
  results.bodies[FIXED_COST_CASE] = { bytes: 7900, children: 1 }
  const page = benchmarkPage(results)
  const opening = page.split('## Targets')[0] ?? ''
  assert.match(opening, /^\*\*A hook call with next to no work of its own costs this server 0\.45 ms of CPU\*\*, 1\.25× a bare fastify hook's 0\.36 ms \(a 1-pod PodSet sync at 1,000 calls\/s;/m)
  assert.match(opening, /On a burst of 1,400 calls recorded from a real Metacontroller v4\.17\.2 \(300 PostgresWriters applied at once, their statuses written, resynced, and 200 of them deleted\), it spent \*\*1\.2 ms of CPU a call\*\*, 1\.20× a naive hook's 1\.0 ms\./)
  assert.ok(opening.indexOf('A hook call costs') < opening.indexOf('![CPU time'), 'the sentence, then the chart')
  assert.match(opening, /\[what a call costs\]\(architecture\.md#what-a-call-costs\)/)
  assert.match(page, /^## The fixed cost of a call\n\nA PodSet sync with one pod \(7\.7 KiB\), sent at 1,000 calls\/s, evenly spaced, over up to 5 connections/m)
  assert.match(page, /^\| this server \| 1000 \| 1\.00 \| 2\.00 \| 0\.450 \| 1\.25× \|$/m)
  assert.match(page, /^\| bare fastify hook \| 1000 \| 1\.00 \| 2\.00 \| 0\.360 \| {2}\|$/m)
  assert.match(page, /^## A replayed burst of real Metacontroller calls\n\n`bench\/recordings\/postgres-writer-burst\.jsonl\.gz`: the 1,400 hook calls a real Metacontroller v4\.17\.2 made .* over 61 s and at most 5 at once: .* By kind: 300 create, 300 update, 600 resync, 200 finalize\./m)
  assert.match(page, /once to warm up and then 2 times/)
  assert.match(benchmarkPage({ ...results, replay: { ...replaySummary, passes: 1 } }), /once to warm up and then once more,/)
  assert.match(benchmarkPage({ ...results, replay: { ...replaySummary, processes: 3, warmupPasses: 5, passes: 4 } }),
    /in a database schema of its own, on 3 processes of its own, one after another, 5 times to warm each up and then 4 times, measured and pooled,/)
  assert.match(page, /^\| this server \| 900 \| 1\.00 \| 2\.00 \| 1\.200 \| 1\.20× \| all \| 300 of 300 \|$/m)
  assert.match(page, /^\| naive hook \| 1000 \| 1\.00 \| 2\.00 \| 1\.000 \| {2}\| \*\*2 differed\*\* \| \*\*not as expected:\*\* 299 of 300 \|$/m)
  const bars = elements(benchmarkCharts(results)[CHART_FILES.cpu] ?? '').filter((element) => element.name === 'rect')
  assert.equal(bars.length, 1 + 4, 'the background, and the fixed cost\'s, the resync\'s, the create\'s and the burst\'s ratio bars')
})

test('a run that measured neither the fixed cost nor the burst says nothing of them', () => {
  const page = benchmarkPage(resultsOf(fullRows()))
  assert.doesNotMatch(page, /A hook call with|On a burst|## The fixed cost|## A replayed burst/)
})

test('a run without PodSet cases has no charts, and its page links none', () => {
  const rows = fullRows().filter((one) => one.case.startsWith('PostgresWriter'))
  assert.deepEqual(benchmarkCharts(resultsOf(rows)), {})
  assert.doesNotMatch(benchmarkPage(resultsOf(rows)), /\.svg\)/)
})

/** The elements of an SVG document, checked to nest and close as XML requires. */
function elements (svg: string): Array<{ name: string, attributes: Record<string, string> }> {
  const open: string[] = []
  const found: Array<{ name: string, attributes: Record<string, string> }> = []
  for (const [, closing, name, attributes = '', selfClosing] of svg.matchAll(/<(\/?)([a-z]+)([^>]*?)(\/?)>/g)) {
    if (closing === '/') {
      assert.equal(open.pop(), name, `</${name}> closes what was opened last`)
      continue
    }
    found.push({ name: name as string, attributes: Object.fromEntries([...attributes.matchAll(/([a-z-]+)="([^"]*)"/g)].map(([, key, value]) => [key, value])) })
    if (selfClosing !== '/') open.push(name as string)
  }
  assert.deepEqual(open, [], 'every element is closed')
  return found
}

/** The y of each horizontal guide whose label starts with `label`, from its dashed line (drawn just before the label). */
function guideYs (svg: string, label: string): number[] {
  return [...svg.matchAll(/<line x1="[^"]*" y1="([^"]*)"[^>]*stroke-dasharray="6 3"\/><text[^>]*>([^<]*)<\/text>/g)]
    .filter(([, , text]) => text?.startsWith(label))
    .map(([, y]) => Number(y))
}

test('the CPU chart draws each side\'s CPU over the better peer\'s as a line over the request sizes, with 1.0 drawn', () => {
  const charts = benchmarkCharts(resultsOf(fullRows()))
  assert.deepEqual(Object.keys(charts).sort(), [CHART_FILES.cpu, CHART_FILES.memory].sort())
  for (const svg of Object.values(charts)) {
    const [root] = elements(svg)
    assert.equal(root?.name, 'svg')
    assert.equal(root?.attributes.xmlns, 'http://www.w3.org/2000/svg')
    assert.match(svg, /^<svg [^>]*viewBox="0 0 \d+ \d+"/, 'a size of its own, for GitHub to show it inline')
    assert.doesNotMatch(svg, /<script|href=/, 'nothing GitHub would strip or fetch')
  }
  const cpu = charts[CHART_FILES.cpu] ?? ''
  const lines = elements(cpu).filter((element) => element.name === 'polyline')
  assert.equal(lines.length, 4, 'this server, its 304s, the fastify peer and the receive floor, each over the better peer')
  const points = lines.map((element) => (element.attributes.points ?? '').split(' ').map((pair) => pair.split(',').map(Number) as [number, number]))
  for (const line of points) {
    assert.equal(line.length, 3, 'one point per PodSet size')
    assert.ok(line[0]![0] < line[1]![0] && line[1]![0] < line[2]![0], 'larger requests further right')
  }
  // The same x for the same request on every line, and on a log scale: 10x the bytes (57 kB to 556 kB) spans as much
  // as 20x (556 kB to 11.1 MB) spans log(20)/log(10) of.
  const [ours, etag, fastify] = points as [[number, number][], [number, number][], [number, number][]]
  for (const line of points) assert.deepEqual(line.map(([x]) => x), ours.map(([x]) => x))
  const spans = (ours[2]![0] - ours[1]![0]) / (ours[1]![0] - ours[0]![0])
  assert.ok(Math.abs(spans - Math.log(11_100_000 / 556_000) / Math.log(556_000 / 57_000)) < 0.01, String(spans))
  // At concurrency 5: this server 0.2 + 0.04 ms per pod over node:http's 0.2 + 0.045, under 1.0 and falling with the
  // size; the fastify peer's 0.2 + 0.05 above it; the 304's far below.
  assert.equal(guideYs(cpu, '1.0: the reference').length, 1, '1.0 drawn on the panel of the other calls too')
  const [parity] = guideYs(cpu, '1.0: the better peer') as [number]
  for (const [index, [, y]] of ours.entries()) {
    assert.ok(y > parity, 'this server under 1.0 (a larger y)')
    assert.ok(fastify[index]![1] < parity, 'the fastify peer over 1.0')
    assert.ok(etag[index]![1] > y, 'the 304 under the changed request')
  }
  assert.ok(ours[0]![1] < ours[2]![1], 'the ratio falls as the request grows')
  assert.equal(elements(cpu).filter((element) => element.name === 'rect').length, 1 + 2, 'the background, and the resync\'s and the create\'s ratio bars')
  assert.match(charts[CHART_FILES.memory] ?? '', /the Deployment's memory limit, 768 MiB/)
})

test('log axes tick at each power of their base around the values, and times read in their best unit', () => {
  assert.deepEqual(powers([57, 11_000], 4), [16, 64, 256, 1024, 4096, 16384])
  assert.deepEqual(powers([1024], 4), [1024, 4096])
  assert.deepEqual(powers([0.05, 130], 10), [0.01, 0.1, 1, 10, 100, 1000])
  assert.deepEqual([0.045, 0.37, 3.81, 114.2].map(duration), ['45 µs', '0.37 ms', '3.8 ms', '114 ms'])
})

test('docs/benchmarks.md and its charts are committed with the bench/results.json they were made from, and are what the generator makes of it', () => {
  const root = join(import.meta.dirname, '..', '..')
  const [page, results] = [join(root, 'docs', 'benchmarks.md'), join(root, 'bench', 'results.json')]
  assert.equal(existsSync(page), existsSync(results), 'both or neither: `npm run bench` writes them together')
  if (!existsSync(page)) return
  const committed = JSON.parse(readFileSync(results, 'utf8')) as Results
  assert.equal(readFileSync(page, 'utf8'), benchmarkPage(committed), 'run `npm run bench` again rather than editing docs/benchmarks.md')
  for (const [file, svg] of Object.entries(benchmarkCharts(committed))) {
    assert.equal(readFileSync(join(root, 'docs', file), 'utf8'), svg, `run \`npm run bench\` again rather than editing docs/${file}`)
  }
})
