import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { parse, stringify } from 'yaml'
import { RESYNC_PERIOD_SECONDS, type Environment } from './environment.js'

/**
 * One end-to-end scenario: a namespace of its own, kubectl helpers, polling with timeouts that report what they
 * saw, the stability check, and the logs to print when something fails.
 */

const root = join(import.meta.dirname, '..', '..')

export interface KubeObject {
  apiVersion: string
  kind: string
  metadata: {
    name: string
    namespace?: string
    uid: string
    resourceVersion: string
    generation?: number
    labels?: Record<string, string>
    finalizers?: string[]
    deletionTimestamp?: string
    ownerReferences?: Array<{ uid: string, kind: string, name: string, controller?: boolean }>
  }
  spec?: any
  status?: any
}

interface Condition { type: string, status: string, reason: string, message: string }

/** A parent custom resource and the controller that serves it (as named in the hook server's log lines). */
export interface Parent {
  controller: string
  resource: string
  name: string
}

const DEFAULT_TIMEOUT_MS = 90_000
const POLL_INTERVAL_MS = 500

/** Runs `body` on a namespace it creates; when `body` fails, writes the scenario's diagnostics before the error. */
export async function inNewNamespace (env: Environment, namespace: string, body: (s: Scenario) => Promise<void>): Promise<void> {
  const s = new Scenario(env, namespace)
  try {
    await s.kubectl(['create', 'namespace', namespace])
    await body(s)
  } catch (error) {
    process.stderr.write(`\n[e2e] ${namespace} failed; diagnostics:\n${await s.diagnostics()}\n\n`)
    throw error
  }
}

export class Scenario {
  constructor (readonly env: Environment, readonly namespace: string) {}

  async kubectl (args: string[], input?: string): Promise<string> {
    return await this.env.cluster.kubectl(args, input)
  }

  /** `kubectl get <args> -n <namespace> -o json`. */
  async get<T = KubeObject> (...args: string[]): Promise<T> {
    return JSON.parse(await this.kubectl(['get', ...args, '-n', this.namespace, '-o', 'json'])) as T
  }

  async list (resources: string): Promise<KubeObject[]> {
    return (await this.get<{ items: KubeObject[] }>(resources)).items
  }

  /** The object, or undefined when it does not exist. */
  async find (resource: string, name: string): Promise<KubeObject | undefined> {
    const items = await this.list(resource)
    return items.find((item) => item.metadata.name === name)
  }

  /**
   * An original sample from manifests/examples/. The PostgresWriter sample pins `namespace: default`, which
   * `kubectl apply -n` refuses, so a pinned namespace is dropped; nothing else changes.
   */
  sample (file: string): KubeObject {
    return sampleResource(file)
  }

  /** Applies an original sample in this scenario's namespace. */
  async applySample (file: string): Promise<KubeObject> {
    const sample = this.sample(file)
    await this.kubectl(['apply', '-n', this.namespace, '-f', '-'], stringify(sample))
    return sample
  }

  async patch (resource: string, name: string, patch: object, subresource?: 'status'): Promise<void> {
    await this.kubectl(['patch', resource, name, '-n', this.namespace, '--type', 'merge', '-p', JSON.stringify(patch),
      ...(subresource === undefined ? [] : [`--subresource=${subresource}`])])
  }

  async delete (resource: string, name: string): Promise<void> {
    await this.kubectl(['delete', resource, name, '-n', this.namespace, '--wait=false'])
  }

  /** Runs one step of the scenario, timing it and naming it in a failure. */
  async step<T> (name: string, run: () => Promise<T>): Promise<T> {
    const t0 = Date.now()
    try {
      return await run()
    } catch (error) {
      if (error instanceof Error) error.message = `step "${name}": ${error.message}`
      throw error
    } finally {
      process.stderr.write(`[e2e] ${this.namespace} › ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)\n`)
    }
  }

  /**
   * Polls `check` until it returns without throwing, and returns its value. On timeout the error says what was
   * awaited and what the last attempt observed. A component of the rig or the hook server dying fails at once.
   */
  async eventually<T> (what: string, check: () => Promise<T>, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      this.env.cluster.assertRunning()
      assert.ok(this.env.hookServer.running(), `the hook server exited; see ${this.env.hookServer.logFile}`)
      try {
        return await check()
      } catch (error) {
        if (Date.now() > deadline) {
          throw new Error(`${what}: still not so after ${timeoutMs / 1000} s; last observed: ${error instanceof Error ? error.message : String(error)}`)
        }
      }
      await sleep(POLL_INTERVAL_MS)
    }
  }

  /**
   * The hook server's log lines for calls about one parent: those that name it, and the 304s (which name no parent,
   * their bodies unparsed) whose ETag an answer about it carried.
   */
  hookCalls (controller: string, name: string, hook: 'sync' | 'finalize'): Array<Record<string, unknown>> {
    const parent = `${this.namespace}/${name}`
    const lines = this.env.hookServer.logLines().filter((line) => line.controller === controller && line.hook === hook)
    const etags = new Set(lines.filter((line) => line.parent === parent && line.etag !== undefined).map((line) => line.etag))
    return lines.filter((line) => line.parent === parent || (line.statusCode === 304 && etags.has(line.etag)))
  }

  /**
   * The stability check: once the scenario has settled (two snapshots a sync call apart are equal), three resync
   * periods pass (every parent gets three more sync calls) with no resourceVersion of a parent or of a child (of the
   * `children` resources, e.g. `services,deployments`) changing, no new or repeated SyncError event, and no change in
   * `fingerprint` (e.g. the PostgreSQL row with its xmin).
   */
  async assertStable (parents: Parent[], watched: { children?: string, fingerprint?: () => Promise<unknown> }): Promise<string> {
    const snapshot = async (): Promise<unknown> => ({
      objects: await this.resourceVersions(parents, watched.children),
      syncErrors: await this.syncErrorCounts(),
      fingerprint: await watched.fingerprint?.()
    })
    const syncCalls = (): number[] => parents.map((p) => this.hookCalls(p.controller, p.name, 'sync').length)
    const afterSyncs = async (count: number): Promise<void> => {
      const base = syncCalls()
      await this.eventually(`${count} more sync calls of ${parents.map((p) => p.name).join(', ')}`, async () => {
        const calls = syncCalls()
        assert.ok(calls.every((n, i) => n - (base[i] ?? 0) >= count), `sync calls so far ${JSON.stringify(calls)}, before ${JSON.stringify(base)}`)
      }, (count * RESYNC_PERIOD_SECONDS + 60) * 1000)
    }

    let settled = await snapshot()
    for (let attempt = 1; ; attempt++) {
      await afterSyncs(1)
      const next = await snapshot()
      if (isDeepStrictEqual(next, settled)) break
      if (attempt === 10) assert.deepEqual(next, settled, 'still changing across each of 10 sync calls')
      settled = next
    }
    const t0 = Date.now()
    const base = syncCalls()
    await afterSyncs(3)
    const after = await snapshot()
    assert.deepEqual(after, settled, 'something changed during three resync periods: a resourceVersion (apply churn or a hot loop), a SyncError event, or the database')
    const calls = syncCalls().map((n, i) => n - (base[i] ?? 0))
    return `${calls.join('/')} sync calls in ${((Date.now() - t0) / 1000).toFixed(1)} s, nothing changed`
  }

  private async resourceVersions (parents: Parent[], childResources: string | undefined): Promise<Record<string, string>> {
    const versions: Record<string, string> = {}
    const uids = new Set<string>()
    for (const parent of parents) {
      const object = await this.get(parent.resource, parent.name)
      uids.add(object.metadata.uid)
      versions[`${object.kind}/${object.metadata.name}`] = object.metadata.resourceVersion
    }
    for (const child of childResources === undefined ? [] : await this.list(childResources)) {
      if (child.metadata.ownerReferences?.some((owner) => uids.has(owner.uid)) === true) {
        versions[`${child.kind}/${child.metadata.name}`] = child.metadata.resourceVersion
      }
    }
    return versions
  }

  /** SyncError events in the namespace (Metacontroller puts them on parents), with how often each happened. */
  async syncErrorCounts (): Promise<Record<string, number>> {
    const events = await this.list('events')
    return Object.fromEntries(events
      .filter((event: any) => event.reason === 'SyncError')
      .map((event: any) => [`${event.involvedObject.kind}/${event.involvedObject.name}: ${event.message}`, event.count ?? 1]))
  }

  /** What to print when the scenario fails: the namespace's events and the relevant tails of the logs. */
  async diagnostics (): Promise<string> {
    const sections: string[] = []
    try {
      sections.push(`--- events in ${this.namespace} ---\n${await this.kubectl(['get', 'events', '-n', this.namespace, '--sort-by=.lastTimestamp'])}`)
    } catch (error) {
      sections.push(`--- events in ${this.namespace}: ${String(error)}`)
    }
    const logTail = (file: string, lines: number): string => {
      try {
        const all = readFileSync(file, 'utf8').trimEnd().split('\n')
        const about = all.filter((line) => line.includes(this.namespace))
        return `--- ${file}: last ${lines} lines about ${this.namespace} ---\n${about.slice(-lines).join('\n')}\n--- last ${lines / 2} lines ---\n${all.slice(-lines / 2).join('\n')}`
      } catch (error) {
        return `--- ${file}: ${String(error)}`
      }
    }
    sections.push(logTail(this.env.hookServer.logFile, 40))
    sections.push(logTail(this.env.cluster.logFile('metacontroller'), 40))
    return sections.join('\n')
  }
}

/** An original sample from manifests/examples/, without the namespace it may pin (see Scenario.sample). */
export function sampleResource (file: string): KubeObject {
  const sample = parse(readFileSync(join(root, 'manifests', 'examples', file), 'utf8')) as KubeObject
  delete sample.metadata.namespace
  return sample
}

export function condition (object: KubeObject | undefined, type: string): Condition | undefined {
  return (object?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type)
}

/** Fails (with the object's status) unless its `Ready` condition has the given status. */
export function assertReady (object: KubeObject | undefined, status: 'True' | 'False', reason?: string): void {
  const ready = condition(object, 'Ready')
  assert.ok(ready?.status === status && (reason === undefined || ready.reason === reason),
    `${object?.kind}/${object?.metadata.name} Ready is not ${status}${reason === undefined ? '' : ` (${reason})`}; status: ${JSON.stringify(object?.status)}`)
}

/** A JSON pointer's value in `object`. */
function at (object: unknown, pointer: string): unknown {
  return pointer.split('/').slice(1).reduce<any>((value, key) => value?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], object)
}

/**
 * Stores `spec` (merged into the parent's) as a cluster would have stored it before its CRD had the constraints at
 * `constraints` (JSON pointers into the CRD's first version's spec schema): they are taken out of the CRD for the
 * write and put back after it.
 */
export async function storeRefusedSpec (s: Scenario, subject: { crd: string, resource: string, name: string }, constraints: string[], spec: object): Promise<void> {
  const base = '/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties'
  const crd = JSON.parse(await s.kubectl(['get', 'crd', subject.crd, '-o', 'json']))
  const kept = constraints.map((path) => ({ path: `${base}${path}`, value: at(crd, `${base}${path}`) }))
  for (const { path, value } of kept) assert.notEqual(value, undefined, `${subject.crd} has no ${path}`)
  await s.kubectl(['patch', 'crd', subject.crd, '--type=json', '-p', JSON.stringify(kept.map(({ path }) => ({ op: 'remove', path })))])
  try {
    // The API server takes a moment to serve the looser schema.
    await s.eventually(`the API server to store the spec once ${subject.crd} is looser`, async () => {
      await s.patch(subject.resource, subject.name, { spec })
    }, 30_000)
  } finally {
    await s.kubectl(['patch', 'crd', subject.crd, '--type=json', '-p', JSON.stringify(kept.map(({ path, value }) => ({ op: 'add', path, value })))])
  }
  const stored = await s.get(subject.resource, subject.name)
  const probe = { apiVersion: stored.apiVersion, kind: stored.kind, metadata: { name: `${subject.name}-probe` }, spec: stored.spec }
  await s.eventually('the API server to refuse that spec again', async () => {
    const refused = await s.kubectl(['apply', '--dry-run=server', '-n', s.namespace, '-f', '-'], JSON.stringify(probe)).then(() => false, () => true)
    assert.ok(refused, 'a new object with this spec is still accepted')
  }, 30_000)
}
