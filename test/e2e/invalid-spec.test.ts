/**
 * A stored resource whose spec the hooks refuse, end to end: stored while its CRD lacked a constraint (as before a
 * stricter CRD, or on a cluster without CEL), the resource shows Ready=False with reason InvalidSpec naming each bad
 * field, and Metacontroller creates, updates and deletes no child over several resyncs, under the controller's own
 * update strategy and, for PodSet, under OnDelete too; fixing the spec resumes normal work. Run with
 * `npm run test:e2e`, on the rig's Metacontroller or any other build (E2E_METACONTROLLER).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startEnvironment, type Environment } from './environment.js'
import { assertReady, condition, inNewNamespace, type Scenario, storeRefusedSpec, type KubeObject } from './scenario.js'

let environment: Environment | undefined

function env (): Environment {
  assert.ok(environment !== undefined, 'the end-to-end environment did not start')
  return environment
}

const RESYNCS = 4

type Snapshot = Record<string, { uid: string, resourceVersion: string, generation: number | undefined }>

interface Subject {
  controller: string
  resource: string
  name: string
  crd: string
  /** The children's resources, e.g. `services,deployments`; none for a decorator without attachments. */
  children?: string
  /** Whether `kubectl get`'s READY column is the Ready condition's status (PodSet's counts ready pods, as the original's did). */
  readyColumn: boolean
}

/** Every child of the parent: its uid, resourceVersion and generation, which any create, update or delete changes. */
async function children (s: Scenario, subject: Subject): Promise<Snapshot> {
  if (subject.children === undefined) return {}
  const parent = await s.get(subject.resource, subject.name)
  const owned = (await s.list(subject.children)).filter((child) => child.metadata.ownerReferences?.some((owner) => owner.uid === parent.metadata.uid))
  return Object.fromEntries(owned.map((child) => [`${child.kind}/${child.metadata.name}`, {
    uid: child.metadata.uid, resourceVersion: child.metadata.resourceVersion, generation: child.metadata.generation
  }]))
}

/** Waits for `count` more sync calls about the subject (304s included), then asserts that no child changed since `before`. */
async function unchangedOver (s: Scenario, subject: Subject, count: number, before: Snapshot, what: string): Promise<string> {
  const calls = (): number => s.hookCalls(subject.controller, subject.name, 'sync').length
  const base = calls()
  const syncErrors = await s.syncErrorCounts()
  const t0 = Date.now()
  await s.eventually(`${count} more sync calls of ${subject.name}`, async () => {
    assert.ok(calls() - base >= count, `${calls() - base} so far`)
  }, (count * 5 + 60) * 1000)
  const now = await children(s, subject)
  assert.deepEqual(now, before, `${what}: a child was created, updated or deleted`)
  assert.deepEqual(await s.syncErrorCounts(), syncErrors, `${what}: a SyncError event`)
  const versions = Object.entries(now).map(([child, { resourceVersion, generation }]) => `${child} rv ${resourceVersion} gen ${generation ?? '-'}`).join(', ')
  return `${what}: ${calls() - base} sync calls in ${((Date.now() - t0) / 1000).toFixed(1)} s, ${versions === '' ? 'no children' : `children unchanged (${versions})`}`
}

/** Waits until the parent says InvalidSpec for its current generation, naming each field; returns the parent. */
async function invalidSpecShown (s: Scenario, subject: Subject, fields: string[]): Promise<KubeObject> {
  return await s.eventually('Ready=False, reason InvalidSpec, naming each bad field', async () => {
    const parent = await s.get(subject.resource, subject.name)
    assertReady(parent, 'False', 'InvalidSpec')
    const ready = condition(parent, 'Ready')
    for (const field of fields) assert.ok(ready?.message.includes(`${field}:`), `${field} in ${ready?.message}`)
    assert.equal(parent.status.observedGeneration, parent.metadata.generation)
    const jsonPath = '{range .status.conditions[?(@.type=="Ready")]}{.status} {.reason}{end}'
    assert.equal(await s.kubectl(['get', subject.resource, subject.name, '-n', s.namespace, '-o', `jsonpath=${jsonPath}`]), 'False InvalidSpec')
    if (subject.readyColumn) {
      const [header = '', row = ''] = (await s.kubectl(['get', subject.resource, subject.name, '-n', s.namespace])).trim().split('\n')
      const columns = Object.fromEntries(header.split(/\s{2,}/).map((title, i) => [title, row.split(/\s{2,}/)[i]]))
      assert.equal(columns.READY, 'False', `kubectl get: ${JSON.stringify(columns)}`)
    }
    return parent
  })
}

async function setUpdateStrategy (s: Scenario, controller: string, method: string): Promise<void> {
  await s.kubectl(['patch', 'compositecontroller', controller, '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/spec/childResources/0/updateStrategy/method', value: method }])])
}

function report (line: string): void {
  process.stderr.write(`[e2e]   ${line}\n`)
}

describe('end to end: a stored spec the hooks refuse is shown on the resource, and no child changes', () => {
  before(async () => {
    environment = await startEnvironment()
    process.stderr.write(`[e2e] environment ready (Metacontroller ${environment.cluster.metacontrollerVersion ?? environment.cluster.metacontroller?.binary}, hooks ${environment.hookVersion}); logs in ${environment.cluster.logsDir}\n`)
  }, { timeout: 300_000 })

  after(async () => { await environment?.stop() }, { timeout: 60_000 })

  const run = async (namespace: string, body: (s: Scenario) => Promise<void>): Promise<void> => {
    await inNewNamespace(env(), namespace, body)
  }

  it('PodSet (Recreate, then OnDelete): the pods stay as they are, and a fixed spec scales them', { timeout: 600_000 }, async () => {
    await run('e2e-invalid-podset', async (s) => {
      await s.env.cluster.waitForDefaultServiceAccount(s.namespace, 60_000)
      const sample = await s.applySample('podset.yaml')
      const subject: Subject = { controller: 'podset', resource: 'podsets', name: sample.metadata.name, crd: 'podsets.batch.tutorial.kubebuilder.io', children: 'pods', readyColumn: false }
      await s.patch('podsets', subject.name, { spec: { replicas: 2 } })
      const valid = await s.step('two pods, Ready=True, settled', async () => {
        await s.eventually('two pods and Ready=True', async () => {
          assertReady(await s.get('podsets', subject.name), 'True', 'PodsAvailable')
          assert.equal(Object.keys(await children(s, subject)).length, 2)
        })
        report(await s.assertStable([subject], { children: subject.children }))
        return await children(s, subject)
      })
      await s.step('store replicas -1 and image "busy box"', async () => {
        await storeRefusedSpec(s, subject, ['/replicas/minimum', '/image/pattern'], { replicas: -1, image: 'busy box' })
      })
      await s.step('Ready=False InvalidSpec naming spec.replicas and spec.image', async () => { await invalidSpecShown(s, subject, ['spec.replicas', 'spec.image']) })
      await s.step(`Recreate: the pods unchanged over ${RESYNCS} resyncs`, async () => { report(await unchangedOver(s, subject, RESYNCS, valid, 'Recreate')) })
      await s.step(`OnDelete: the pods unchanged over ${RESYNCS} resyncs`, async () => {
        await setUpdateStrategy(s, 'podset', 'OnDelete')
        report(await unchangedOver(s, subject, RESYNCS, valid, 'OnDelete'))
      })
      await setUpdateStrategy(s, 'podset', 'Recreate')
      await s.step('fixed: replicas 3, the two pods kept and a third created, Ready=True', async () => {
        await s.patch('podsets', subject.name, { spec: { replicas: 3, image: 'busybox' } })
        await s.eventually('three pods, the first two the same, and Ready=True', async () => {
          const pods = await children(s, subject)
          assert.equal(Object.keys(pods).length, 3, JSON.stringify(pods))
          for (const [pod, { uid }] of Object.entries(valid)) assert.equal(pods[pod]?.uid, uid, `${pod} was replaced`)
          assertReady(await s.get('podsets', subject.name), 'True', 'PodsAvailable')
        })
      })
    })
  })

  it('PulsarConsumer (InPlace): the Deployment stays as it is, and a fixed spec updates it in place', { timeout: 600_000 }, async () => {
    await run('e2e-invalid-pulsar', async (s) => {
      const sample = await s.applySample('pulsar-consumer.yaml')
      const subject: Subject = { controller: 'pulsar-consumer', resource: 'pulsarconsumers', name: sample.metadata.name, crd: 'pulsarconsumers.pulsar.pulsarconsumer.krvarma.com', children: 'deployments', readyColumn: true }
      const deployment = `${subject.name}-deployment`
      const valid = await s.step('the Deployment, settled', async () => {
        await s.eventually('the Deployment', async () => { await s.get('deployments', deployment) })
        report(await s.assertStable([subject], { children: subject.children }))
        return await children(s, subject)
      })
      await s.step('store serverAddress http://… and an empty topic', async () => {
        await storeRefusedSpec(s, subject, ['/serverAddress/pattern', '/topic/minLength'], { serverAddress: 'http://localhost:6650', topic: '' })
      })
      await s.step('Ready=False InvalidSpec naming spec.serverAddress and spec.topic', async () => { await invalidSpecShown(s, subject, ['spec.serverAddress', 'spec.topic']) })
      await s.step(`InPlace: the Deployment unchanged over ${RESYNCS} resyncs`, async () => { report(await unchangedOver(s, subject, RESYNCS, valid, 'InPlace')) })
      await s.step('fixed with 2 replicas: the same Deployment updated', async () => {
        await s.patch('pulsarconsumers', subject.name, { spec: { serverAddress: sample.spec.serverAddress, topic: sample.spec.topic, replicas: 2 } })
        await s.eventually('the Deployment with 2 replicas, the same uid, and the status back', async () => {
          const object = await s.get('deployments', deployment)
          assert.equal(object.spec.replicas, 2)
          assert.equal(object.metadata.uid, valid[`Deployment/${deployment}`]?.uid)
          const parent = await s.get('pulsarconsumers', subject.name)
          assert.notEqual(condition(parent, 'Ready')?.reason, 'InvalidSpec')
          assert.equal(parent.status.replicas, 2)
        })
      })
    })
  })

  it('BookStore (InPlace, five kinds of children): every child stays as it is, and a fixed spec updates the Deployment', { timeout: 600_000 }, async () => {
    await run('e2e-invalid-bookstore', async (s) => {
      const sample = await s.applySample('bookstore.yaml')
      const subject: Subject = { controller: 'bookstore', resource: 'bookstores', name: sample.metadata.name, crd: 'bookstores.blog.velotio.com', children: 'services,statefulsets,persistentvolumeclaims,deployments', readyColumn: true }
      const app = `${subject.name}-bookstore`
      const valid = await s.step('the five children, settled', async () => {
        await s.eventually('five children', async () => { assert.equal(Object.keys(await children(s, subject)).length, 5) })
        report(await s.assertStable([subject], { children: subject.children }))
        return await children(s, subject)
      })
      await s.step('store bookDB.replicas -1 and bookApp.serviceType Bogus', async () => {
        await storeRefusedSpec(s, subject, ['/bookDB/properties/replicas/minimum', '/bookApp/properties/serviceType/enum'], { bookDB: { replicas: -1 }, bookApp: { serviceType: 'Bogus' } })
      })
      await s.step('Ready=False InvalidSpec naming both fields', async () => { await invalidSpecShown(s, subject, ['spec.bookDB.replicas', 'spec.bookApp.serviceType']) })
      await s.step(`InPlace: every child unchanged over ${RESYNCS} resyncs`, async () => { report(await unchangedOver(s, subject, RESYNCS, valid, 'InPlace')) })
      await s.step('fixed, with 2 app replicas: the same Deployment updated', async () => {
        await s.patch('bookstores', subject.name, { spec: { bookDB: { replicas: 1 }, bookApp: { serviceType: sample.spec.bookApp.serviceType, replicas: 2 } } })
        await s.eventually('the app Deployment with 2 replicas, the same uid', async () => {
          const deployment = await s.get('deployments', app)
          assert.equal(deployment.spec.replicas, 2)
          assert.equal(deployment.metadata.uid, valid[`Deployment/${app}`]?.uid)
          assert.notEqual(condition(await s.get('bookstores', subject.name), 'Ready')?.reason, 'InvalidSpec')
        })
      })
    })
  })

  it('PostgresWriter: the row stays as it is, and a fixed spec writes it', { timeout: 600_000 }, async () => {
    await run('e2e-invalid-postgres-writer', async (s) => {
      const sample = await s.applySample('postgres-writer.yaml')
      const subject: Subject = { controller: 'postgres-writer', resource: 'postgreswriters', name: sample.metadata.name, crd: 'postgreswriters.demo.yash.com', readyColumn: true }
      const row = async (): Promise<unknown> => await s.env.postgres.query(
        `SELECT age, xmin::text AS xmin FROM public."${sample.spec.table}" WHERE id = $1`, [`${s.namespace}/${subject.name}`])
      await s.step('the row, Ready=True', async () => {
        await s.eventually('Ready=True', async () => { assertReady(await s.get('postgreswriters', subject.name), 'True', 'RowWritten') })
      })
      const written = await row()
      await s.step('store age -1', async () => { await storeRefusedSpec(s, subject, ['/age/minimum'], { age: -1 }) })
      await s.step('Ready=False InvalidSpec naming spec.age', async () => { await invalidSpecShown(s, subject, ['spec.age']) })
      await s.step(`the row unchanged over ${RESYNCS} resyncs`, async () => {
        const line = await unchangedOver(s, subject, RESYNCS, {}, 'PostgresWriter')
        assert.deepEqual(await row(), written, 'the row was written')
        report(`${line}; the row unchanged (${JSON.stringify(written)})`)
      })
      await s.step('fixed with age 30: the row updated, Ready=True', async () => {
        await s.patch('postgreswriters', subject.name, { spec: { age: 30 } })
        await s.eventually('the row with age 30 and Ready=True', async () => {
          assert.deepEqual((await row() as Array<{ age: number }>).map((r) => r.age), [30])
          assertReady(await s.get('postgreswriters', subject.name), 'True', 'RowWritten')
        })
      })
    })
  })
})
