/**
 * The hook pods inside their real 768 MiB cgroups: five of the largest PodSets the CRD admits at once (the worst
 * spec, 2,000 pods each, on the cordoned node so that the pods stay Pending), then sixteen syncs of one of them, with
 * its 2,000 observed pods as the API server returned them, sent at once through the Service. No OOM kill, no restart
 * (so liveness never killed a busy pod), every call answered; then a pod drained while syncs run: its endpoint stops
 * serving (the readiness probe failed) before the pod is gone.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import { podSet } from '../../../hooks/podset/index.js'
import { worstResource } from '../../../dev/worst-spec.js'
import type { KubeObject } from '../scenario.js'
import { assertNoFailedHookCalls, eventually, NAMESPACE, startNodeEnvironment, type NodeEnvironment, type Pod } from './environment.js'

const root = join(import.meta.dirname, '..', '..', '..')
const NS = 'node-memory'
const PODSETS = 5
const SYNCS = 16
const MiB = 2 ** 20

describe('the hook pods in their 768 MiB cgroups', () => {
  let env: NodeEnvironment
  before(async () => { env = await startNodeEnvironment() }, { timeout: 900_000 })
  after(async () => { await env?.stop() }, { timeout: 600_000 })

  const usage = async (): Promise<Array<{ pod: string, restarts: number, peakMiB: number, oomKills: number }>> =>
    (await env.hookPods()).map((pod) => {
      const status = pod.status.containerStatuses?.[0]
      const cgroup = env.node.containerUsage(status?.containerID ?? '')
      return { pod: pod.metadata.name, restarts: status?.restartCount ?? -1, peakMiB: Math.round(cgroup.memoryPeakBytes / MiB), oomKills: cgroup.oomKills }
    })
  const assertUnharmed = async (what: string): Promise<string> => {
    const pods = await usage()
    for (const pod of pods) {
      assert.equal(pod.oomKills, 0, `${what}: ${pod.pod} OOM-killed`)
      assert.equal(pod.restarts, 0, `${what}: ${pod.pod} restarted`)
    }
    return pods.map((pod) => `${pod.pod} peak ${pod.peakMiB} MiB`).join(', ')
  }

  it(`${PODSETS} of the largest PodSets at once, then ${SYNCS} of their syncs at once, then a drain`, { timeout: 3_000_000 }, async () => {
    await env.kubectl(['create', 'namespace', NS])
    await env.kubectl(['cordon', env.node.name])
    for (const pod of await env.hookPods()) env.node.resetPeak(pod.status.containerStatuses?.[0]?.containerID ?? '')
    const worst = worstResource(podSet.resource) as { apiVersion: string, kind: string, metadata: { name: string }, spec: { replicas: number } }
    const names = Array.from({ length: PODSETS }, (_, i) => `${worst.metadata.name.slice(2)}-${i}`)
    const t0 = Date.now()
    await env.kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: names.map((name) => ({ ...worst, metadata: { name } })) }))
    await eventually(`${PODSETS} × ${worst.spec.replicas} pods, every PodSet Ready=True`, async () => {
      const podSets = (JSON.parse(await env.kubectl(['get', 'podsets', '-n', NS, '-o', 'json'])) as { items: KubeObject[] }).items
      for (const object of podSets) assert.equal(object.status?.readyReplicas, worst.spec.replicas, `${object.metadata.name}: ${JSON.stringify(object.status?.conditions)}`)
    }, 1_800_000)
    const created = Date.now() - t0
    // Metacontroller's creation of 10,000 pods races its own cache ("already exists", retried): only hook calls count.
    const events = await assertNoFailedHookCalls(env, NS)
    process.stderr.write(`[node] ${PODSETS} PodSets of ${worst.spec.replicas} pods synced in ${(created / 1000).toFixed(1)} s, ` +
      `${events.length} SyncError events, none a failed hook call; ${await assertUnharmed('five PodSets')}\n`)

    // Sixteen syncs of the first PodSet as Metacontroller sends it: the parent and its observed pods.
    const parent = JSON.parse(await env.kubectl(['get', 'podset', names[0] ?? '', '-n', NS, '-o', 'json'])) as KubeObject
    const pods = (JSON.parse(await env.kubectl(['get', 'pods', '-n', NS, '-l', `controller-uid=${parent.metadata.uid}`, '-o', 'json'])) as { items: Pod[] }).items
    assert.equal(pods.length, worst.spec.replicas)
    const template = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'podset', 'first-sync.json'), 'utf8')) as Record<string, unknown>
    const body = JSON.stringify({ ...template, parent, children: { 'Pod.v1': Object.fromEntries(pods.map((pod) => [`${NS}/${pod.metadata.name}`, pod])) } })
    for (const pod of await env.hookPods()) env.node.resetPeak(pod.status.containerStatuses?.[0]?.containerID ?? '')
    // As Metacontroller does, a call answered 503 (no memory for its body yet) is sent again after its Retry-After, and
    // one whose connection the draining pod closed (status 0) is sent again too: a kept-alive connection closed as the
    // call was sent, or an answer cut short when the pod's in-flight hooks outlasted HOOKS_SHUTDOWN_TIMEOUT.
    const sync = async (): Promise<{ status: number, ms: number, statuses: number[] }> => {
      const start = Date.now()
      const statuses: number[] = []
      for (;;) {
        const answer = await fetch(`http://${env.serviceIP}/podset/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
          .then(async (response) => { await response.arrayBuffer(); return response })
          .catch(() => undefined)
        statuses.push(answer?.status ?? 0)
        if ((answer !== undefined && answer.status !== 503) || statuses.length === 10) return { status: answer?.status ?? 0, ms: Date.now() - start, statuses }
        await sleep(Number(answer?.headers.get('retry-after') ?? 1) * 1000)
      }
    }
    const answers = await Promise.all(Array.from({ length: SYNCS }, sync))
    process.stderr.write(`[node] ${SYNCS} syncs of ${(Buffer.byteLength(body) / MiB).toFixed(1)} MiB at once: ${answers.flatMap((a) => a.statuses).length} calls, ` +
      `${answers.flatMap((a) => a.statuses).filter((status) => status === 503).length} answered 503 and sent again; final statuses ${[...new Set(answers.map((a) => a.status))].join(', ')}, ` +
      `slowest ${(Math.max(...answers.map((a) => a.ms)) / 1000).toFixed(1)} s; ${await assertUnharmed('sixteen syncs')}\n`)
    assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200))

    // A drain while syncs run: the pod's endpoint stops serving before the pod is gone.
    await env.kubectl(['uncordon', env.node.name])
    const [victim] = await env.hookPods()
    assert.ok(victim?.status.podIP !== undefined)
    const load = Promise.all(Array.from({ length: SYNCS }, sync))
    const d0 = Date.now()
    await env.kubectl(['delete', 'pod', victim.metadata.name, '-n', NAMESPACE, '--wait=false'])
    let notServingAt: number | undefined
    for (;;) {
      const slices = JSON.parse(await env.kubectl(['get', 'endpointslices', '-n', NAMESPACE, '-o', 'json'])) as { items: Array<{ endpoints?: Array<{ addresses: string[], conditions: { serving?: boolean } }> }> }
      const endpoint = slices.items.flatMap((slice) => slice.endpoints ?? []).find((e) => e.addresses.includes(victim.status.podIP ?? ''))
      if (endpoint === undefined) break
      if (endpoint.conditions.serving === false) notServingAt ??= Date.now() - d0
      await sleep(200)
    }
    const drained = Date.now() - d0
    const during = await load
    process.stderr.write(`[node] drain of ${victim.metadata.name}: not serving after ${notServingAt === undefined ? 'never' : `${(notServingAt / 1000).toFixed(1)} s`}, gone after ${(drained / 1000).toFixed(1)} s; ` +
      `syncs meanwhile: ${during.map((a) => a.statuses.join('/')).join(' ')} (0: closed by the draining pod, sent again)\n`)
    assert.ok(notServingAt !== undefined, 'the readiness probe never failed during the drain')
    assert.deepEqual(during.map((a) => a.status), during.map(() => 200))
  })
})
