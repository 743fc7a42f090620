/**
 * One hook pod SIGKILLed in the middle of a burst of PostgresWriters: the kubelet restarts its container, the
 * Service sends calls to the other replica meanwhile, and every object comes back in sync: its row written once,
 * Ready=True. Prints how long that took after the kill, and the calls that failed on the killed pod.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { condition, sampleResource, type KubeObject } from '../scenario.js'
import { eventually, failedHookCalls, startNodeEnvironment, syncErrors, type NodeEnvironment } from './environment.js'

const NS = 'node-kill'
const BURST = Number(process.env.NODE_KILL_BURST ?? 300)
const TABLE = 'burst'

describe('a hook pod SIGKILLed mid-burst', () => {
  let env: NodeEnvironment
  before(async () => { env = await startNodeEnvironment() }, { timeout: 900_000 })
  after(async () => { await env?.stop() }, { timeout: 300_000 })

  it(`${BURST} PostgresWriters at once, one pod killed: all back in sync`, { timeout: 1_200_000 }, async () => {
    await env.kubectl(['create', 'namespace', NS])
    const writer = sampleResource('postgres-writer.yaml')
    const items = Array.from({ length: BURST }, (_, i) => ({ ...writer, metadata: { name: `writer-${i}` }, spec: { ...writer.spec, table: TABLE, age: i } }))
    const ready = async (): Promise<number> => (JSON.parse(await env.kubectl(['get', 'postgreswriters', '-n', NS, '-o', 'json'])) as { items: KubeObject[] }).items
      .filter((object) => condition(object, 'Ready')?.status === 'True').length

    const t0 = Date.now()
    await env.kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }))
    await eventually('a tenth of the burst synced', async () => { assert.ok(await ready() >= BURST / 10) }, 300_000)
    const [victim] = await env.hookPods()
    assert.ok(victim !== undefined)
    const containerId = victim.status.containerStatuses?.[0]?.containerID ?? ''
    const killedAt = Date.now()
    const readyAtKill = await ready()
    env.node.signalContainer(containerId, 'SIGKILL')

    await eventually('every PostgresWriter Ready=True with its row, once', async () => {
      assert.equal(await ready(), BURST)
      const [{ rows, ids }] = await env.postgres.query<{ rows: string, ids: string }>(`SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM public."${TABLE}"`) as [{ rows: string, ids: string }]
      assert.deepEqual([Number(rows), Number(ids)], [BURST, BURST])
    }, 600_000)
    const backInSync = Date.now()
    const restarted = await eventually('the killed pod restarted and ready', async () => {
      const pod = (await env.hookPods()).find((p) => p.metadata.name === victim.metadata.name)
      const status = pod?.status.containerStatuses?.[0]
      assert.equal(status?.restartCount, 1)
      assert.equal(status?.ready, true)
      return status
    })
    const events = await syncErrors(env, NS)
    const kinds = (pattern: RegExp): number => events.filter((event) => pattern.test(event)).length
    process.stderr.write(`[node] ${BURST} PostgresWriters: ${readyAtKill} ready when ${victim.metadata.name} was killed ${((killedAt - t0) / 1000).toFixed(1)} s into the burst; ` +
      `every object back in sync ${((backInSync - killedAt) / 1000).toFixed(1)} s after the kill (${((backInSync - t0) / 1000).toFixed(1)} s after the apply); ` +
      `restarted (${restarted.lastState?.terminated?.reason ?? 'no reason'}); failed calls: ${events.length} SyncError events ` +
      `(${kinds(/connection reset/)} reset, ${kinds(/connection refused/)} refused), ${failedHookCalls(env).length} error lines in Metacontroller's log\n`)
  })
})
