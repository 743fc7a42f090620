import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ServerProcess } from '../../dev/server-process.js'
import { WEBHOOK_TIMEOUT_SECONDS } from '../../hooks/framework/wire/webhook.js'
import { MAX_ARGUMENT_LENGTH, MAX_COMMAND_ARGUMENTS } from '../../hooks/podset/resource.js'
import { fixture } from '../helpers/fixtures.js'
import { AMPLIFYING_SYNC, DEPLOYMENT, withSmallCalls } from './small-calls.js'

/**
 * Callers whose small requests each ask for a large answer (a 2 KB PodSet sync of 2,000 pods, whose answer is
 * 1.6 MB), looping or all at once, and Metacontroller's own largest syncs, against a hook server started as the
 * Deployment starts it: every large call is answered (200, or 503 with Retry-After when the memory for its answer did
 * not free within HOOKS_ADMISSION_TIMEOUT), and another caller's small calls meanwhile within 1 s at the 99th
 * percentile.
 */

interface LargeAnswer { status: number | undefined, children: number | undefined, retryAfter: string | null, ms: number }

async function largeCall (server: ServerProcess, body: string): Promise<LargeAnswer> {
  const started = performance.now()
  try {
    const response = await fetch(`${server.url}/podset/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(2 * WEBHOOK_TIMEOUT_SECONDS * 1000) })
    const answer = await response.json() as { children?: unknown[] }
    return { status: response.status, children: answer.children?.length, retryAfter: response.headers.get('retry-after'), ms: performance.now() - started }
  } catch {
    return { status: undefined, children: undefined, retryAfter: null, ms: performance.now() - started }
  }
}

/** `200 x 148, 503 x 252, slowest 9100 ms`. */
function tally (answers: LargeAnswer[]): string {
  const counts = new Map<string, number>()
  for (const { status } of answers) counts.set(String(status ?? 'none'), (counts.get(String(status ?? 'none')) ?? 0) + 1)
  return `${[...counts].map(([status, count]) => `${status} x ${count}`).join(', ')}, slowest ${Math.max(...answers.map((answer) => answer.ms)).toFixed(0)} ms`
}

function checkAnswered (answers: LargeAnswer[], fullChildren: number): void {
  for (const answer of answers) {
    assert.ok(answer.status === 200 || answer.status === 503, JSON.stringify(answer))
    if (answer.status === 200) assert.equal(answer.children, fullChildren)
    else assert.equal(answer.retryAfter, '1')
  }
}

test(`16 callers each asking for a 2,000-pod answer in a loop for 8 s: all answered, small calls within 1 s, ${DEPLOYMENT}`, async (t) => {
  const answers = await withSmallCalls(t, async (server) => {
    const until = performance.now() + 8000
    const loops = await Promise.all(Array.from({ length: 16 }, async () => {
      const answers: LargeAnswer[] = []
      while (performance.now() < until) answers.push(await largeCall(server, AMPLIFYING_SYNC))
      return answers
    }))
    return loops.flat()
  })
  t.diagnostic(`large calls: ${tally(answers)}`)
  checkAnswered(answers, 2000)
  assert.ok(answers.filter((answer) => answer.status === 200).length >= 16, 'every caller got full answers')
})

test(`400 callers each asking for a 2,000-pod answer at once: each answered in time, small calls within 1 s, ${DEPLOYMENT}`, async (t) => {
  const answers = await withSmallCalls(t, async (server) =>
    await Promise.all(Array.from({ length: 400 }, async () => await largeCall(server, AMPLIFYING_SYNC))))
  t.diagnostic(`large calls: ${tally(answers)}`)
  checkAnswered(answers, 2000)
  assert.ok(answers.some((answer) => answer.status === 200))
})

/** A running pod of the PodSet as Metacontroller observes it: its spec, and a status with its conditions. */
function observedPod (name: string, namespace: string, command: string[]): object {
  const at = '2026-12-02T10:00:00Z'
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, uid: '6c1f7a8e-3b1d-4f0e-9a51-7d2e8c4b9f10', resourceVersion: '123456', creationTimestamp: at, labels: { app: name } },
    spec: { containers: [{ name: 'busybox', image: 'busybox', command, resources: {}, terminationMessagePath: '/dev/termination-log' }], restartPolicy: 'Always', nodeName: 'node-1' },
    status: {
      phase: 'Running',
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True', lastTransitionTime: at })),
      containerStatuses: [{ name: 'busybox', ready: true, restartCount: 0, image: 'busybox:latest', imageID: `docker.io/library/busybox@sha256:${'0'.repeat(64)}`, state: { running: { startedAt: at } } }],
      podIP: '10.244.0.17',
      startTime: at
    }
  }
}

test(`sixteen syncs of 2,000-pod PodSets with their observed pods at once: all answered in full, small calls within 1 s, ${DEPLOYMENT}`, async (t) => {
  const request = fixture('podset', 'first-sync')
  const command = Array.from({ length: MAX_COMMAND_ARGUMENTS }, () => 'x'.repeat(MAX_ARGUMENT_LENGTH))
  request.parent.spec = { replicas: 2000, image: 'busybox', command }
  const { name, namespace } = request.parent.metadata
  request.children['Pod.v1'] = Object.fromEntries(Array.from({ length: 2000 }, (_, ordinal) =>
    [`${namespace}/${name}-pod-${ordinal}`, observedPod(`${name}-pod-${ordinal}`, namespace, command)]))
  const body = JSON.stringify(request)
  const answers = await withSmallCalls(t, async (server) =>
    await Promise.all(Array.from({ length: 16 }, async () => await largeCall(server, body))))
  t.diagnostic(`${(body.length / 1e6).toFixed(1)} MB each: ${tally(answers)}`)
  for (const answer of answers) assert.deepEqual([answer.status, answer.children], [200, 2000], JSON.stringify(answer))
})
