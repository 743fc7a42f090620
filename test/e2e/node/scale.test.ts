/**
 * PostgresWriters applied at once (10,000 measured; NODE_SCALE_WRITERS sets how many, CI runs fewer), served by the
 * Deployment's two pods: seconds until every row exists and every object is Ready=True, then until every row is
 * gone after a delete; the hook pods' CPU seconds and peak memory from their cgroups over the burst, and their CPU
 * at rest over NODE_SCALE_REST_SECONDS afterwards, against the goals of 5 % and 1 % of one core.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import { sampleResource } from '../scenario.js'
import { eventually, startNodeEnvironment, syncErrors, type NodeEnvironment } from './environment.js'

const NS = 'node-scale'
const WRITERS = Number(process.env.NODE_SCALE_WRITERS ?? 1000)
const REST_SECONDS = Number(process.env.NODE_SCALE_REST_SECONDS ?? 300)
const TABLE = 'scale'
/** kubectl processes applying the burst side by side. */
const APPLIERS = 4

describe(`${WRITERS} PostgresWriters at once on a real node`, () => {
  let env: NodeEnvironment
  before(async () => { env = await startNodeEnvironment() }, { timeout: 900_000 })
  after(async () => { await env?.stop() }, { timeout: 300_000 })

  it('every row and Ready=True, then every row gone; the pods\' CPU and memory', { timeout: 3_600_000 }, async () => {
    await env.kubectl(['create', 'namespace', NS])
    const pods = await env.hookPods()
    const containers = pods.map((pod) => ({ pod: pod.metadata.name, id: pod.status.containerStatuses?.[0]?.containerID ?? '' }))
    const cpu = (): number[] => containers.map(({ id }) => env.node.containerUsage(id).cpuSeconds)
    const calls = async (): Promise<number> => (await env.hookLogLines()).filter((line) => line.controller === 'postgres-writer' && typeof line.statusCode === 'number').length
    for (const { id } of containers) env.node.resetPeak(id)
    const callsBefore = await calls()
    const cpuBefore = cpu()

    const writer = sampleResource('postgres-writer.yaml')
    const items = Array.from({ length: WRITERS }, (_, i) => ({ ...writer, metadata: { name: `writer-${i}` }, spec: { ...writer.spec, table: TABLE, age: i % 100 } }))
    const rowCount = async (): Promise<number> => Number((await env.postgres.query<{ n: string }>(`SELECT count(*) AS n FROM public."${TABLE}"`).catch(() => [{ n: '0' }]))[0]?.n)
    const readyCount = async (): Promise<number> => (await env.kubectl(['get', 'postgreswriters', '-n', NS, '-o', 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}']))
      .split('\n').filter((status) => status === 'True').length

    const t0 = Date.now()
    await Promise.all(Array.from({ length: APPLIERS }, async (_, k) => {
      const share = items.filter((_, i) => i % APPLIERS === k)
      await env.kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: share }))
    }))
    const applied = Date.now() - t0
    const rowsAt = await eventually('every row', async () => { assert.equal(await rowCount(), WRITERS); return Date.now() - t0 }, 3_000_000)
    const readyAt = await eventually('every PostgresWriter Ready=True', async () => { assert.equal(await readyCount(), WRITERS); return Date.now() - t0 }, 3_000_000)
    const burstCpu = cpu().map((seconds, i) => seconds - (cpuBefore[i] ?? 0))
    const burstCalls = await calls() - callsBefore
    const peaks = containers.map(({ id }) => env.node.containerUsage(id))

    // At rest: Metacontroller's resync (the shipped 300 s) is all that calls the hooks.
    const restStart = cpu()
    const restCallsBefore = await calls()
    await sleep(REST_SECONDS * 1000)
    const restCpu = cpu().map((seconds, i) => seconds - (restStart[i] ?? 0))
    const restCalls = await calls() - restCallsBefore

    const d0 = Date.now()
    await env.kubectl(['delete', 'postgreswriters', '--all', '-n', NS, '--wait=false'])
    const goneAt = await eventually('every row gone', async () => { assert.equal(await rowCount(), 0); return Date.now() - d0 }, 3_000_000)
    await eventually('every PostgresWriter gone', async () => {
      assert.equal((await env.kubectl(['get', 'postgreswriters', '-n', NS, '-o', 'name'])).trim(), '')
    }, 600_000)

    const core = (seconds: number, ms: number): string => `${(100 * seconds / (ms / 1000)).toFixed(2)} % of a core`
    const total = (values: number[]): number => values.reduce((sum, value) => sum + value, 0)
    const failed = await syncErrors(env, NS)
    process.stderr.write(`[node] ${WRITERS} PostgresWriters: applied in ${(applied / 1000).toFixed(1)} s; every row after ${(rowsAt / 1000).toFixed(1)} s, ` +
      `every Ready=True after ${(readyAt / 1000).toFixed(1)} s; ${burstCalls} calls; hook CPU ${burstCpu.map((s) => s.toFixed(1)).join(' + ')} s = ${core(total(burstCpu), readyAt)} over the burst; ` +
      `peak memory ${peaks.map((usage) => `${(usage.memoryPeakBytes / 2 ** 20).toFixed(0)} MiB`).join(', ')}; ` +
      `at rest ${restCalls} calls and ${restCpu.map((s) => s.toFixed(2)).join(' + ')} s of CPU in ${REST_SECONDS} s = ${core(total(restCpu), REST_SECONDS * 1000)}; ` +
      `every row gone ${(goneAt / 1000).toFixed(1)} s after the delete; SyncErrors: ${failed.length === 0 ? 'none' : failed.join('; ')}\n`)
    for (const [i, usage] of peaks.entries()) assert.equal(usage.oomKills, 0, `${containers[i]?.pod} was OOM-killed`)
    assert.deepEqual((await env.hookPods()).map((pod) => pod.status.containerStatuses?.[0]?.restartCount), [0, 0])
  })
})
