/**
 * The four original samples (manifests/examples/) on the real node, their hooks served by the Deployment's pods
 * behind the Service. Their workloads' images (busybox, mongo, the book app, the Pulsar consumer) are not on the
 * node and nothing is pulled, so those pods are scheduled onto the node and stay Pending: each sample reaches the
 * state its page documents for that.
 */
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { stringify } from 'yaml'
import { condition, sampleResource, type KubeObject } from '../scenario.js'
import { assertNoFailedHookCalls, eventually, startNodeEnvironment, type NodeEnvironment, type Pod } from './environment.js'

const root = join(import.meta.dirname, '..', '..', '..')
const NS = 'node-samples'

describe('the four samples on a real node, served by the pods', () => {
  let env: NodeEnvironment
  const get = async (resource: string, name: string): Promise<KubeObject> => JSON.parse(await env.kubectl(['get', resource, name, '-n', NS, '-o', 'json'])) as KubeObject
  const podsOf = async (selector: string): Promise<Pod[]> => (JSON.parse(await env.kubectl(['get', 'pods', '-n', NS, '-l', selector, '-o', 'json'])) as { items: Pod[] }).items
  const onNode = (pods: Pod[]): void => {
    assert.ok(pods.length > 0, 'no pods')
    for (const pod of pods) assert.equal(pod.spec.nodeName, env.node.name, `${pod.metadata.name} is not scheduled`)
  }

  before(async () => {
    env = await startNodeEnvironment()
    await env.kubectl(['create', 'namespace', NS])
    const samples = readdirSync(join(root, 'manifests', 'examples')).sort()
    assert.deepEqual(samples, ['bookstore.yaml', 'podset.yaml', 'postgres-writer.yaml', 'pulsar-consumer.yaml'])
    for (const file of samples) await env.kubectl(['apply', '-n', NS, '-f', '-'], stringify(sampleResource(file)))
  }, { timeout: 900_000 })
  after(async () => { await env?.stop() }, { timeout: 300_000 })

  it('PostgresWriter: its row holds the spec, Ready=True (RowWritten)', { timeout: 300_000 }, async () => {
    const sample = sampleResource('postgres-writer.yaml')
    await eventually('the row and Ready=True', async () => {
      const rows = await env.postgres.query(`SELECT name, age, country FROM public."${sample.spec.table}" WHERE id = $1`, [`${NS}/${sample.metadata.name}`])
      assert.deepEqual(rows, [{ name: sample.spec.name, age: sample.spec.age, country: sample.spec.country }])
      const ready = condition(await get('postgreswriters', sample.metadata.name), 'Ready')
      assert.equal(`${ready?.status} ${ready?.reason}`, 'True RowWritten')
    })
  })

  it('PodSet: its one pod on the node, counted while Pending, Ready=True (PodsAvailable)', { timeout: 300_000 }, async () => {
    await eventually('the pod and Ready=True', async () => {
      const podSet = await get('podsets', 'podset-sample')
      onNode(await podsOf('app=podset-sample'))
      assert.deepEqual(podSet.status?.podNames, ['podset-sample-pod-0'])
      assert.equal(podSet.status?.readyReplicas, 1)
      const ready = condition(podSet, 'Ready')
      assert.equal(`${ready?.status} ${ready?.reason}`, 'True PodsAvailable')
    })
  })

  it('PulsarConsumer: its Deployment\'s consumer on the node, not ready, Ready=False (ConsumersNotReady)', { timeout: 300_000 }, async () => {
    await eventually('the Deployment\'s pod and ConsumersNotReady', async () => {
      const consumer = await get('pulsarconsumers', 'pulsarconsumer-sample-1')
      const deployments = (JSON.parse(await env.kubectl(['get', 'deployments', '-n', NS, '-o', 'json'])) as { items: KubeObject[] }).items
      const deployment = deployments.find((d) => d.metadata.ownerReferences?.some((owner) => owner.uid === consumer.metadata.uid))
      assert.ok(deployment !== undefined, 'no Deployment of the consumer')
      onNode(await podsOf(Object.entries(deployment.spec.selector.matchLabels as Record<string, string>).map(([key, value]) => `${key}=${value}`).join(',')))
      assert.equal(consumer.status?.readyReplicas ?? 0, 0)
      const ready = condition(consumer, 'Ready')
      assert.equal(`${ready?.status} ${ready?.reason}`, 'False ConsumersNotReady')
    })
  })

  it('BookStore: its five children, the app\'s pod on the node, Ready=False (ReplicasNotReady)', { timeout: 300_000 }, async () => {
    const name = 'example-bookstore'
    await eventually('the five children and ReplicasNotReady', async () => {
      for (const [resource, child] of [['services', `${name}-mongodb`], ['statefulsets', `${name}-mongodb`], ['persistentvolumeclaims', `data-${name}-mongodb-0`], ['services', `${name}-bookstore`], ['deployments', `${name}-bookstore`]] as const) {
        await get(resource, child)
      }
      const deployment = await get('deployments', `${name}-bookstore`)
      onNode(await podsOf(Object.entries(deployment.spec.selector.matchLabels as Record<string, string>).map(([key, value]) => `${key}=${value}`).join(',')))
      const ready = condition(await get('bookstores', name), 'Ready')
      assert.equal(`${ready?.status} ${ready?.reason}`, 'False ReplicasNotReady')
    })
  })

  it('every sample\'s sync was answered by the pods, and no call failed', { timeout: 120_000 }, async () => {
    const lines = await env.hookLogLines()
    for (const [controller, name] of [['postgres-writer', 'sample-student'], ['podset', 'podset-sample'], ['pulsar-consumer', 'pulsarconsumer-sample-1'], ['bookstore', 'example-bookstore']]) {
      const calls = lines.filter((line) => line.controller === controller && line.parent === `${NS}/${name}`)
      assert.ok(calls.some((line) => line.statusCode === 200), `${controller}: no answered call in the pods' logs`)
    }
    // Metacontroller's own write conflicts (a status update racing another, retried) are SyncErrors too.
    await assertNoFailedHookCalls(env, NS)
  })
})
