/**
 * Smoke test of the e2e rig itself (needs scripts/build-e2e-binaries.sh to have run):
 *   node --import tsx --test test/e2e/rig/cluster.test.ts
 * Set E2E_RIG_VERBOSE=1 to see start-up progress; the component logs are in cluster.logsDir.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { startCluster, type Cluster } from './cluster.js'

const suffix = randomBytes(3).toString('hex')
let cluster: Cluster | undefined
let hookServer: Server | undefined

function c (): Cluster {
  assert.ok(cluster !== undefined, 'cluster did not start')
  return cluster
}

function note (text: string): void {
  process.stderr.write(`[rig smoke] ${text}\n`)
}

async function json<T> (args: string[]): Promise<T> {
  return JSON.parse(await c().kubectl([...args, '-o', 'json'])) as T
}

interface Meta { metadata: { name: string, uid: string, ownerReferences?: Array<{ uid: string, kind: string }> } }

describe('e2e rig', () => {
  before(async () => {
    const t0 = Date.now()
    cluster = await startCluster({ verbose: true, metacontrollerArgs: ['--cache-flush-interval=30s'] })
    note(`cluster ready in ${Date.now() - t0} ms: ${JSON.stringify(cluster.timings)}; logs in ${cluster.logsDir}`)
  }, { timeout: 240_000 })

  after(async () => {
    hookServer?.close()
    const t0 = Date.now()
    await cluster?.stop()
    note(`stopped in ${Date.now() - t0} ms`)
  }, { timeout: 60_000 })

  it('serves the pinned Kubernetes version', async () => {
    const v = await json<{ serverVersion: { gitVersion: string }, clientVersion: { gitVersion: string } }>(['version'])
    assert.equal(v.serverVersion.gitVersion, 'v1.36.3')
    assert.equal(v.clientVersion.gitVersion, 'v1.36.3')
  })

  it('creates a namespace', async () => {
    const ns = `smoke-ns-${suffix}`
    await c().kubectl(['create', 'namespace', ns])
    const got = await json<{ status: { phase: string } }>(['get', 'namespace', ns])
    assert.equal(got.status.phase, 'Active')
  })

  it('serves Metacontroller\'s CRDs', async () => {
    const names = (await c().kubectl(['api-resources', '--api-group=metacontroller.k8s.io', '-o', 'name'])).split('\n')
    assert.ok(names.includes('compositecontrollers.metacontroller.k8s.io'), names.join(','))
    assert.ok(names.includes('decoratorcontrollers.metacontroller.k8s.io'), names.join(','))
    const list = await json<{ items: unknown[] }>(['get', 'compositecontrollers'])
    assert.deepEqual(list.items, [])
    await c().kubectl(['get', 'decoratorcontrollers'])
  })

  it('garbage-collects a ConfigMap whose owner ConfigMap is deleted (KCM garbage collector)', { timeout: 90_000 }, async () => {
    const ns = 'default'
    await c().kubectl(['create', 'configmap', `owner-${suffix}`, '-n', ns, '--from-literal=a=b'])
    const owner = await json<Meta>(['get', 'configmap', `owner-${suffix}`, '-n', ns])
    await c().kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `owned-${suffix}`,
        namespace: ns,
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: owner.metadata.name, uid: owner.metadata.uid }]
      },
      data: { c: 'd' }
    }))
    const t0 = Date.now()
    await c().kubectl(['delete', 'configmap', `owner-${suffix}`, '-n', ns])
    await c().kubectl(['wait', '--for=delete', `configmap/owned-${suffix}`, '-n', ns, '--timeout=80s'])
    note(`GC removed the owned ConfigMap ${Date.now() - t0} ms after its owner was deleted`)
  })

  it('completes a namespace deletion (KCM namespace controller)', { timeout: 90_000 }, async () => {
    const ns = `smoke-del-${suffix}`
    await c().kubectl(['create', 'namespace', ns])
    await c().kubectl(['create', 'configmap', 'content', '-n', ns, '--from-literal=a=b'])
    const t0 = Date.now()
    await c().kubectl(['delete', 'namespace', ns, '--wait=false'])
    await c().kubectl(['wait', '--for=delete', `namespace/${ns}`, '--timeout=80s'])
    note(`namespace deletion completed in ${Date.now() - t0} ms`)
  })

  it('creates a bare Pod once KCM made the default ServiceAccount (admission plugin on)', { timeout: 60_000 }, async () => {
    const ns = `smoke-pod-${suffix}`
    await c().kubectl(['create', 'namespace', ns])
    const t0 = Date.now()
    await c().waitForDefaultServiceAccount(ns)
    note(`default ServiceAccount appeared ${Date.now() - t0} ms after the namespace`)
    await c().kubectl(['run', 'pod', '-n', ns, '--image=example.invalid/none', '--restart=Never'])
    const pod = await json<{ status: { phase: string }, spec: { serviceAccountName: string } }>(['get', 'pod', 'pod', '-n', ns])
    assert.equal(pod.status.phase, 'Pending') // no scheduler, no kubelet
    assert.equal(pod.spec.serviceAccountName, 'default')
  })

  it('runs Metacontroller: a CompositeController sync hook creates a child, GC removes it with the parent', { timeout: 150_000 }, async () => {
    // A sync hook on 127.0.0.1 that answers every parent with one ConfigMap child. The body works for hook v1 and v2.
    let calls = 0
    hookServer = createServer((req, res) => {
      let body = ''
      req.on('data', (chunk: Buffer) => { body += chunk.toString('utf8') })
      req.on('end', () => {
        calls++
        const parent = (JSON.parse(body) as { parent: { metadata: { name: string } } }).parent
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({
          status: { children: 1 },
          children: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${parent.metadata.name}-child` }, data: { from: 'hook' } }]
        }))
      })
    })
    await new Promise<void>((resolve) => hookServer?.listen(0, '127.0.0.1', resolve))
    const port = (hookServer.address() as AddressInfo).port

    const group = `smoke${suffix}.e2e.example.com`
    await c().kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `parents.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'parents', singular: 'parent', kind: 'Parent' },
        versions: [{
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }
        }]
      }
    }))
    await c().kubectl(['wait', '--for=condition=Established', `crd/parents.${group}`, '--timeout=30s'])
    const crdReady = Date.now()
    await c().kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'metacontroller.k8s.io/v1alpha1',
      kind: 'CompositeController',
      metadata: { name: `smoke-${suffix}` },
      spec: {
        generateSelector: true,
        parentResource: { apiVersion: `${group}/v1`, resource: 'parents' },
        childResources: [{ apiVersion: 'v1', resource: 'configmaps' }],
        hooks: { sync: { webhook: { url: `http://127.0.0.1:${port}/sync` } } }
      }
    }))
    await c().kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: `${group}/v1`, kind: 'Parent', metadata: { name: 'p1', namespace: 'default' }, spec: {}
    }))
    const deadline = Date.now() + 60_000
    let child: Meta | undefined
    while (child === undefined) {
      try {
        child = await json<Meta>(['get', 'configmap', 'p1-child', '-n', 'default'])
      } catch (error) {
        c().assertRunning()
        if (Date.now() > deadline) throw new Error(`no child after 60 s (${calls} hook calls); see ${c().logFile('metacontroller')}: ${String(error)}`)
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
    note(`Metacontroller created the child ${Date.now() - crdReady} ms after the parent CRD was Established (${calls} hook calls)`)
    assert.equal(child.metadata.ownerReferences?.[0]?.kind, 'Parent')

    // The parent's kind appeared after KCM started: its GC notices new resources on its 30 s discovery resync.
    const t0 = Date.now()
    await c().kubectl(['delete', `parents.${group}`, 'p1', '-n', 'default'])
    await c().kubectl(['wait', '--for=delete', 'configmap/p1-child', '-n', 'default', '--timeout=90s'])
    note(`GC removed the child of a new-CRD parent ${Date.now() - t0} ms after the parent was deleted`)
    c().assertRunning()
  })
})
