import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../hooks/runtime/config.js'
import { bodyLimits, MAX_DEPTH } from '../../hooks/http/request-body.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { deployment } from '../../dev/deployment.js'
import { fixture } from '../helpers/fixtures.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { podSetRequest } from '../../dev/api-server/podset-requests.js'
import { startHookServer, testSchema } from './hook-server.js'

/**
 * The worst bodies at the default HOOKS_BODY_LIMIT, one and three at once, against the hook server as the Deployment
 * runs it (the Node.js flags of its command): the process stays up, answers /healthz after each, and stays under the Deployment's
 * memory limit; a real 2,000-pod parent with managedFields is still served.
 */

const { memoryLimitMiB, nodeArgs } = deployment()
const limits = bodyLimits(loadConfig({}).bodyLimit)
const request = JSON.stringify(fixture('podset', 'first-sync'))

/** A valid PodSet request with `value` under an extra top-level key (which no hook reads). */
const withExtra = (value: string): string => `${request.slice(0, -1)},"extra":${value}}`
/** Filled up to the body limit with one long string. */
const padded = (body: string): string => `${body.slice(0, -1)},"padding":"${'a'.repeat(limits.bytes - body.length - 20)}"}`

/**
 * Bodies of the shapes that cost V8 the most memory per byte: empty arrays (refused once they pass the bound on
 * values) and deep nesting (refused past MAX_DEPTH), and the costliest bodies within those bounds, padded to the
 * limit: one object with distinct keys (each an internalized string), and arrays nested as deep as MAX_DEPTH lets them.
 */
const WORST: Array<{ name: string, body: () => string, status: number }> = [
  { name: 'empty arrays up to the limit', body: () => withExtra(`[${'[],'.repeat((limits.bytes - request.length) / 3 - 20)}0]`), status: 413 },
  {
    name: 'distinct keys within the bound, padded to the limit',
    body: () => padded(withExtra(`{${Array.from({ length: limits.values / 2 - 2000 }, (_, i) => `"${i.toString(36)}":{}`).join(',')}}`)),
    status: 200
  },
  { name: 'nesting within the bound on values, padded to the limit', body: () => padded(withExtra('['.repeat(limits.values - 2000) + ']'.repeat(limits.values - 2000))), status: 400 },
  { name: `nesting ${MAX_DEPTH - 2} deep, padded to the limit`, body: () => padded(withExtra('['.repeat(MAX_DEPTH - 2) + ']'.repeat(MAX_DEPTH - 2))), status: 200 }
]

async function post (server: ServerProcess, body: string): Promise<{ status: number, text: string }> {
  const response = await fetch(`${server.url}/podset/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  return { status: response.status, text: await response.text() }
}

/** Sends `body` `times` at once; returns the peak RSS meanwhile, after checking the answers and that the server lives. */
async function peakOf (server: ServerProcess, body: string, times: number, status: number): Promise<number> {
  server.resetPeakRss()
  const answers = await Promise.all(Array.from({ length: times }, async () => await post(server, body)))
  for (const answer of answers) assert.equal(answer.status, status, answer.text.slice(0, 300))
  assert.ok(server.running(), server.output().slice(-2000))
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
  return server.peakRssMiB()
}

test(`the worst bodies at HOOKS_BODY_LIMIT (${limits.bytes} bytes) keep the server up and under the Deployment's ${memoryLimitMiB} MiB (${nodeArgs.join(' ')})`, async (t) => {
  const server = await startHookServer(t, { DATABASE_URL: testDatabaseUrl(), PG_SCHEMA: testSchema() }, { deployed: true })
  for (const worst of WORST) {
    const body = worst.body()
    assert.ok(body.length <= limits.bytes && body.length > limits.bytes - 4096, `${worst.name}: ${body.length} bytes`)
    for (const times of [1, 3]) {
      const peak = await peakOf(server, body, times, worst.status)
      t.diagnostic(`${worst.name}, ${times} at once: ${worst.status}, peak RSS ${peak.toFixed(0)} MiB`)
      assert.ok(peak < memoryLimitMiB, `${worst.name}, ${times} at once: peak RSS ${peak.toFixed(0)} MiB`)
    }
  }
  const real = JSON.stringify(podSetRequest({ replicas: 2000 }))
  for (const times of [1, 3]) {
    const peak = await peakOf(server, real, times, 200)
    t.diagnostic(`a 2,000-pod PodSet (${(real.length / 1e6).toFixed(1)} MB), ${times} at once: 200, peak RSS ${peak.toFixed(0)} MiB`)
    assert.ok(peak < memoryLimitMiB, `2,000 pods, ${times} at once: peak RSS ${peak.toFixed(0)} MiB`)
  }
})
