/**
 * A rolling update of the hook server while a steady stream of changes to all four kinds runs: first
 * `kubectl rollout restart`, then a new image. Metacontroller reaches the pods through the Service only, so what
 * keeps its calls from failing is the Deployment's readiness, its preStop pause and the server's drain. Nothing
 * may fail: no SyncError, no PostgresWriter leaving Ready=True, every row there once and holding the last spec.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import { run } from '../rig/process.js'
import { condition, sampleResource, type KubeObject } from '../scenario.js'
import { assertNoFailedHookCalls, DEPLOYMENT, eventually, IMAGE, NAMESPACE, startNodeEnvironment, type NodeEnvironment } from './environment.js'

const NS = 'node-rolling'
const WRITERS = 20
const TABLE = 'rolling'
const NEXT_IMAGE = `${IMAGE}-next`

describe('a rolling update under a steady stream of changes', () => {
  let env: NodeEnvironment
  const list = async (resource: string): Promise<KubeObject[]> => (JSON.parse(await env.kubectl(['get', resource, '-n', NS, '-o', 'json'])) as { items: KubeObject[] }).items
  const patch = async (resource: string, name: string, spec: object): Promise<void> => {
    await env.kubectl(['patch', resource, name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec })])
  }

  before(async () => {
    env = await startNodeEnvironment()
    // The new image: the same build under another tag, which is enough for a new ReplicaSet.
    await run('buildah', ['tag', IMAGE, NEXT_IMAGE])
    await env.node.importImage(NEXT_IMAGE)
  }, { timeout: 900_000 })
  after(async () => { await env?.stop() }, { timeout: 300_000 })

  it('rollout restart, then a new image: 0 SyncErrors, no PostgresWriter leaves Ready=True, 0 rows lost or doubled', { timeout: 1_200_000 }, async () => {
    await env.kubectl(['create', 'namespace', NS])
    const writer = sampleResource('postgres-writer.yaml')
    const consumer = sampleResource('pulsar-consumer.yaml')
    const bookstore = sampleResource('bookstore.yaml')
    const objects = [
      ...Array.from({ length: WRITERS }, (_, i) => ({ ...writer, metadata: { name: `writer-${i}` }, spec: { ...writer.spec, table: TABLE, age: 0 } })),
      ...[0, 1].map((i) => ({ apiVersion: 'batch.tutorial.kubebuilder.io/v1', kind: 'PodSet', metadata: { name: `podset-${i}` }, spec: { replicas: 1 } })),
      ...[0, 1].map((i) => ({ ...consumer, metadata: { name: `consumer-${i}` } })),
      { ...bookstore, metadata: { name: 'bookstore-0' } }
    ]
    await env.kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }))
    const ages = new Map(Array.from({ length: WRITERS }, (_, i) => [`writer-${i}`, 0]))
    const readySince = await eventually('every PostgresWriter Ready=True', async () => {
      const writers = await list('postgreswriters')
      assert.equal(writers.length, WRITERS)
      return new Map(writers.map((object) => {
        const ready = condition(object, 'Ready')
        assert.equal(ready?.status, 'True', `${object.metadata.name}: ${JSON.stringify(ready)}`)
        return [object.metadata.name, (ready as { lastTransitionTime?: string }).lastTransitionTime]
      }))
    })

    // The stream: one change every 250 ms, round the four kinds.
    const flow = { streaming: true }
    let changes = 0
    const notReady: string[] = []
    const stream = (async () => {
      for (let i = 0; flow.streaming; i++) {
        const n = Math.floor(i / 4)
        switch (i % 4) {
          case 0: {
            const name = `writer-${n % WRITERS}`
            const age = (ages.get(name) ?? 0) + 1
            await patch('postgreswriters', name, { age })
            ages.set(name, age)
            break
          }
          case 1: await patch('podsets', `podset-${n % 2}`, { replicas: 1 + (n % 2) }); break
          case 2: await patch('pulsarconsumers', `consumer-${n % 2}`, { topic: `topic-${n}` }); break
          default: await patch('bookstores', 'bookstore-0', { bookApp: { ...bookstore.spec.bookApp, replicas: 1 + (n % 2) } })
        }
        changes++
        await sleep(250)
      }
    })()
    const watch = (async () => {
      while (flow.streaming) {
        for (const object of await list('postgreswriters')) {
          const ready = condition(object, 'Ready')
          if (ready?.status !== 'True') notReady.push(`${object.metadata.name}: ${ready?.status} ${ready?.reason} ${ready?.message}`)
        }
        await sleep(500)
      }
    })()

    const t0 = Date.now()
    const rollout = async (what: string, args: string[]): Promise<string> => {
      const start = Date.now()
      await env.kubectl(args)
      await env.kubectl(['rollout', 'status', `deployment/${DEPLOYMENT}`, '-n', NAMESPACE, '--timeout=600s'])
      return `${what} ${((Date.now() - start) / 1000).toFixed(1)} s`
    }
    try {
      await sleep(10_000)
      const restarted = await rollout('rollout restart', ['rollout', 'restart', `deployment/${DEPLOYMENT}`, '-n', NAMESPACE])
      await sleep(10_000)
      const imaged = await rollout('new image', ['set', 'image', `deployment/${DEPLOYMENT}`, '-n', NAMESPACE, `hooks=${NEXT_IMAGE}`])
      await sleep(10_000)
      process.stderr.write(`[node] ${restarted}, ${imaged}; ${changes} changes in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`)
    } finally {
      flow.streaming = false
      await Promise.all([stream, watch])
    }

    // The rollout is done once the new pods are available; the old ones drain for HOOKS_SHUTDOWN_DELAY and more.
    await eventually('the old pods gone, the new image on both', async () => {
      assert.deepEqual((await env.hookPods()).map((pod) => pod.spec.containers[0].image), [NEXT_IMAGE, NEXT_IMAGE])
    }, 120_000)
    await eventually('every row holds its PostgresWriter\'s last age, once', async () => {
      const rows = await env.postgres.query<{ id: string, age: number, copies: string }>(`SELECT id, max(age) AS age, count(*) AS copies FROM public."${TABLE}" GROUP BY id ORDER BY id`)
      assert.deepEqual(rows.map((row) => [row.id, row.age, Number(row.copies)]).sort(), [...ages].map(([name, age]) => [`${NS}/${name}`, age, 1]).sort())
    })
    assert.deepEqual(notReady, [], 'a PostgresWriter left Ready=True')
    for (const object of await list('postgreswriters')) {
      assert.equal((condition(object, 'Ready') as { lastTransitionTime?: string }).lastTransitionTime, readySince.get(object.metadata.name), `${object.metadata.name} changed Ready since the start`)
    }
    await eventually('the other kinds at their last spec', async () => {
      for (const podSet of await list('podsets')) assert.equal(podSet.status?.readyReplicas, podSet.spec.replicas, podSet.metadata.name)
      for (const object of await list('pulsarconsumers')) assert.equal(object.status?.topic, object.spec.topic, object.metadata.name)
    })
    // Metacontroller's own write conflicts with the stream's patches are SyncErrors too.
    const events = await assertNoFailedHookCalls(env, NS)
    process.stderr.write(`[node] SyncError events: ${events.length}, none a failed hook call\n`)
  })
})
