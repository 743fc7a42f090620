/**
 * The install on a real node: the shipped Deployment's two pods of the image run, become ready, and answer through
 * the Service: its probe port, and a hook on its hook port.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { condition, type KubeObject } from '../scenario.js'
import { eventually, IMAGE, podReady, startNodeEnvironment, type NodeEnvironment } from './environment.js'

const root = join(import.meta.dirname, '..', '..', '..')

describe('the install on a real node', () => {
  let env: NodeEnvironment
  before(async () => {
    env = await startNodeEnvironment()
    process.stderr.write(`[node] started: ${JSON.stringify(env.timings)}\n`)
  }, { timeout: 900_000 })
  after(async () => { await env?.stop() }, { timeout: 300_000 })

  it('runs the image as the Deployment\'s two pods, ready, in a 768 MiB cgroup', async () => {
    const pods = await env.hookPods()
    assert.equal(pods.length, 2, `pods: ${pods.map((pod) => pod.metadata.name).join(', ')}`)
    for (const pod of pods) {
      assert.equal(pod.status.phase, 'Running', `${pod.metadata.name}: ${JSON.stringify(pod.status)}`)
      assert.ok(podReady(pod), `${pod.metadata.name} is not ready: ${JSON.stringify(pod.status.conditions)}`)
      assert.equal(pod.spec.containers[0].image, IMAGE)
      const container = pod.status.containerStatuses?.[0]
      assert.equal(container?.restartCount, 0)
      const usage = env.node.containerUsage(container?.containerID ?? '')
      assert.equal(usage.memoryLimitBytes, 768 * 1024 * 1024)
      process.stderr.write(`[node] ${pod.metadata.name}: ${(usage.memoryBytes / 2 ** 20).toFixed(1)} MiB, ${usage.cpuSeconds.toFixed(2)} CPU s since start\n`)
    }
  })

  it('answers through the Service: /readyz on the probe port, and a PodSet sync on the hook port', async () => {
    const ready = await fetch(`http://${env.serviceIP}:8081/readyz`)
    assert.equal(ready.status, 200)
    const body = readFileSync(join(root, 'test', 'fixtures', 'podset', 'first-sync.json'), 'utf8')
    const answer = await fetch(`http://${env.serviceIP}/podset/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    assert.equal(answer.status, 200)
    const expected = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'podset', 'first-sync.expected.json'), 'utf8'))
    const got = await answer.json() as typeof expected
    // Everything but the condition's lastTransitionTime, which is the time of the call.
    for (const answer of [got, expected]) delete answer.status.conditions[0].lastTransitionTime
    assert.deepEqual(got, expected)
  })

  it('serves Metacontroller at the Service\'s name: a PodSet of no pods is synced, its call in a pod\'s log', { timeout: 180_000 }, async () => {
    await env.kubectl(['create', 'namespace', 'node-install'])
    await env.kubectl(['apply', '-n', 'node-install', '-f', '-'], JSON.stringify({ apiVersion: 'batch.tutorial.kubebuilder.io/v1', kind: 'PodSet', metadata: { name: 'none' }, spec: { replicas: 0 } }))
    await eventually('the PodSet synced', async () => {
      const podSet = JSON.parse(await env.kubectl(['get', 'podset', 'none', '-n', 'node-install', '-o', 'json'])) as KubeObject
      assert.equal(condition(podSet, 'Ready')?.reason, 'PodsAvailable')
      const calls = (await env.hookLogLines()).filter((line) => line.controller === 'podset' && line.parent === 'node-install/none')
      assert.ok(calls.some((line) => line.statusCode === 200), 'no call in the pods\' logs')
    })
  })
})
