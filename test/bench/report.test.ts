import assert from 'node:assert/strict'
import { test } from 'node:test'
import { targets, type Row, type SideName, type Target } from '../../bench/report.js'

/** The verdicts of the bench (bench/report.ts), from rows as a run records them. */

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
    row(podSet, 'ours', 1, 1000, 0.9, 90, 'fastify peer'),
    row(podSet, 'ours, ETag', 1, 12_000, 0.12, 80),
    row(podSet, 'fastify peer', 1, 900, 1.0, 100),
    row(podSet, 'node:http peer', 1, 1100, 0.95, 85),
    row(resync, 'ours', 5, 850, 0.2, 100, 'naive hook'),
    row(resync, 'naive hook', 5, 1000, 0.15, 80)
  ]
  const list = targets({ rows, resync: { rowWrites: 0, hookRequests: 5000, loopQueries: 100 }, wholeRunPeakRssMiB: { ours: 200, 'ours, ETag': 210, 'fastify peer': 400 }, memoryLimitMiB: 768 })
  assert.equal(verdictOf(list, 'Changed requests').verdict, 'met', '0.9 ms against fastify\'s 1.0')
  assert.equal(verdictOf(list, 'Peak RSS <=').verdict, 'not met', '90 MiB against node:http\'s 85')
  assert.equal(verdictOf(list, 'Peak RSS under').verdict, 'met')
  assert.match(verdictOf(list, 'Peak RSS under').figure, /^this server 210 MiB/)
  assert.equal(verdictOf(list, 'Unchanged resync with its ETag: >= 10x').verdict, 'met', '12,000 req/s against the better peer\'s 1,100')
  assert.equal(verdictOf(list, 'Unchanged resync with its ETag: <= 1/10').verdict, 'not met', '0.12 ms against the better peer\'s 0.95')
  assert.equal(verdictOf(list, 'PostgresWriter unchanged resync: >= 0.9x').verdict, 'not met', '0.85× the naive hook')
  assert.equal(verdictOf(list, 'PostgresWriter create').verdict, 'not measured')
  assert.equal(verdictOf(list, 'PostgresWriter unchanged resync: zero').verdict, 'met')
})
