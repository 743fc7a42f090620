/**
 * The four operators end to end, installed as a user installs them (through the overlay that overlay.ts generates
 * from the registry), on a real kube-apiserver with kube-controller-manager and Metacontroller (the rig in
 * test/e2e/rig), the hook server as a process of its own, and a real PostgreSQL. Run with `npm run test:e2e`, which
 * builds the rig's binaries first.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { RESYNC_PERIOD_SECONDS, startEnvironment, type Environment } from './environment.js'
import type { Controller } from '../../hooks/framework/controller.js'
import { controllers } from '../../hooks/controllers.js'
import { answersFromRequestAlone } from '../../hooks/http/etag.js'
import { syncAnswer } from '../../dev/hook-answer.js'
import { planSync } from '../../dev/metacontroller-apply.js'
import { observedChildren } from '../../dev/observed-children.js'
import { edgeResources, refusedResources, resourceJson } from '../helpers/refused-resources.js'
import { assertReady, condition, Scenario, type KubeObject } from './scenario.js'

let environment: Environment | undefined
const durations: Array<{ scenario: string, ms: number }> = []

function env (): Environment {
  assert.ok(environment !== undefined, 'the end-to-end environment did not start')
  return environment
}

async function scenario (name: string, namespace: string, body: (s: Scenario) => Promise<void>): Promise<void> {
  const t0 = Date.now()
  const s = new Scenario(env(), namespace)
  try {
    await s.kubectl(['create', 'namespace', namespace])
    await body(s)
    // Outside the stability windows a SyncError can be legitimate (a write conflict with kube-controller-manager, or
    // with Metacontroller's own stale cache, retried at once): shown, not failed.
    const syncErrors = Object.entries(await s.syncErrorCounts())
    if (syncErrors.length > 0) process.stderr.write(`[e2e]   SyncError events outside the stability window: ${syncErrors.map(([event, count]) => `${count} × ${event}`).join('; ')}\n`)
  } catch (error) {
    process.stderr.write(`\n[e2e] ${name} failed; diagnostics:\n${await s.diagnostics()}\n\n`)
    throw error
  } finally {
    durations.push({ scenario: name, ms: Date.now() - t0 })
  }
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

function owned (child: KubeObject, parent: KubeObject): void {
  const owner = child.metadata.ownerReferences?.find((ref) => ref.controller === true)
  assert.equal(owner?.uid, parent.metadata.uid, `${child.kind}/${child.metadata.name} is not controlled by ${parent.kind}/${parent.metadata.name}`)
}

function container (workload: KubeObject | undefined): any {
  return workload?.spec?.template?.spec?.containers?.[0]
}

function containerEnv (workload: KubeObject | undefined): Record<string, string> {
  return Object.fromEntries((container(workload)?.env ?? []).map((e: { name: string, value: string }) => [e.name, e.value]))
}

interface Row { table: string, name: string, age: number, country: string, xmin: string }

/** The rows of PostgresWriter row id `id` in every table of the public schema that has an `age` column (all but the hook's own). */
async function rowsOf (postgres: Environment['postgres'], id: string): Promise<Row[]> {
  const tables = await postgres.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'age' ORDER BY table_name")
  const found: Row[] = []
  for (const { table_name: table } of tables) {
    for (const row of await postgres.query<Omit<Row, 'table'>>(
      `SELECT name, age, country, xmin::text AS xmin FROM public."${table}" WHERE id = $1`, [id])) {
      found.push({ table, ...row })
    }
  }
  return found
}

describe('end to end: the four operators on kube-apiserver, kube-controller-manager and Metacontroller', () => {
  before(async () => {
    const t0 = Date.now()
    environment = await startEnvironment()
    process.stderr.write(`[e2e] environment ready in ${seconds(Date.now() - t0)} (Metacontroller ${environment.cluster.metacontrollerVersion ?? environment.cluster.metacontroller?.binary}, hooks ${environment.hookVersion}): ` +
      `${Object.entries(environment.timings).map(([part, ms]) => `${part} ${seconds(ms)}`).join(', ')}; logs in ${environment.cluster.logsDir}\n`)
  }, { timeout: 300_000 })

  after(async () => {
    await environment?.stop()
    process.stderr.write(`[e2e] scenario durations: ${durations.map((d) => `${d.scenario} ${seconds(d.ms)}`).join(', ')}\n`)
  }, { timeout: 60_000 })

  it('PostgresWriter: the row follows the object, and a delete waits for PostgreSQL', { timeout: 600_000 }, async () => {
    await scenario('PostgresWriter', 'e2e-postgres-writer', async (s) => {
      const FINALIZER = 'metacontroller.io/decoratorcontroller-postgres-writer'
      const { postgres } = s.env
      const sample = await s.applySample('postgres-writer.yaml')
      const name = sample.metadata.name
      const id = `${s.namespace}/${name}`
      const rows = async (): Promise<Row[]> => await rowsOf(postgres, id)
      const rowsWithoutXmin = async (): Promise<unknown[]> => (await rows()).map(({ xmin, ...row }) => row)
      const writer = async (): Promise<KubeObject> => await s.get('postgreswriters', name)

      await s.step('apply: the row holds the spec, Ready=True', async () => {
        await s.eventually('the row and Ready=True', async () => {
          assert.deepEqual(await rowsWithoutXmin(), [{ table: sample.spec.table, name: sample.spec.name, age: sample.spec.age, country: sample.spec.country }])
          const object = await writer()
          assertReady(object, 'True', 'RowWritten')
          assert.equal(object.status.table, sample.spec.table)
          assert.equal(object.status.id, id)
          assert.ok(object.metadata.finalizers?.includes(FINALIZER), `finalizers: ${JSON.stringify(object.metadata.finalizers)}`)
        })
      })

      await s.step('edit age: the row is updated', async () => {
        await s.patch('postgreswriters', name, { spec: { age: sample.spec.age + 1 } })
        await s.eventually('age in the row', async () => {
          assert.deepEqual(await rowsWithoutXmin(), [{ table: sample.spec.table, name: sample.spec.name, age: sample.spec.age + 1, country: sample.spec.country }])
          const object = await writer()
          assertReady(object, 'True')
          assert.equal(object.status.observedGeneration, object.metadata.generation)
        })
      })

      await s.step('edit table: the row moves', async () => {
        await s.patch('postgreswriters', name, { spec: { table: 'graduates' } })
        await s.eventually('the row in graduates only', async () => {
          assert.deepEqual(await rowsWithoutXmin(), [{ table: 'graduates', name: sample.spec.name, age: sample.spec.age + 1, country: sample.spec.country }])
          const object = await writer()
          assertReady(object, 'True')
          assert.equal(object.status.table, 'graduates')
        })
      })

      await s.step('stable for three resync periods (object, row and its xmin unchanged)', async () => {
        process.stderr.write(`[e2e]   ${await s.assertStable([{ controller: 'postgres-writer', resource: 'postgreswriters', name }], { fingerprint: rows })}\n`)
      })

      await s.step('delete: the row is gone, then the object', async () => {
        await s.delete('postgreswriters', name)
        await s.eventually('the PostgresWriter to be gone', async () => { assert.equal(await s.find('postgreswriters', name), undefined) })
        assert.deepEqual(await rows(), [])
      })

      await s.step('PostgreSQL stopped during a delete: the object stays Terminating', async () => {
        await s.applySample('postgres-writer.yaml')
        await s.eventually('the row of the re-created object', async () => {
          assert.equal((await rows()).length, 1)
          assertReady(await writer(), 'True')
        })
        // Records when each row is deleted, so that the deletion can be shown to come after PostgreSQL is back.
        await postgres.query(`
          CREATE SCHEMA IF NOT EXISTS e2e_audit;
          CREATE TABLE IF NOT EXISTS e2e_audit.deletions (row_id text, deleted_at timestamptz);
          CREATE OR REPLACE FUNCTION e2e_audit.record_deletion() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN INSERT INTO e2e_audit.deletions VALUES (OLD.id, now()); RETURN OLD; END $$;
          CREATE OR REPLACE TRIGGER e2e_record_deletion AFTER DELETE ON public."${sample.spec.table}"
            FOR EACH ROW EXECUTE FUNCTION e2e_audit.record_deletion();`)
        await postgres.stop()
        const finalizeCalls = s.hookCalls('postgres-writer', name, 'finalize').length
        await s.delete('postgreswriters', name)
        // The first calls come at once, from the delete and the status it writes; then one per resync. Refusals over
        // two resync periods show the object staying Terminating, not just surviving the first call.
        await s.eventually('refused finalize calls over two resync periods, the object Terminating with its finalizer and Ready=False', async () => {
          const refused = s.hookCalls('postgres-writer', name, 'finalize').slice(finalizeCalls).filter((call) => call.outcome === 'pending')
          const spanMs = Number(refused.at(-1)?.time ?? 0) - Number(refused[0]?.time ?? 0)
          assert.ok(spanMs >= 2 * RESYNC_PERIOD_SECONDS * 1000, `${refused.length} refused finalize calls over ${spanMs} ms so far`)
          const object = await writer()
          assert.ok(object.metadata.deletionTimestamp !== undefined, 'no deletionTimestamp')
          assert.ok(object.metadata.finalizers?.includes(FINALIZER), `finalizers: ${JSON.stringify(object.metadata.finalizers)}`)
          assertReady(object, 'False', 'DatabaseUnavailable')
        })
      })

      await s.step('PostgreSQL back: the row is deleted, then the object is gone', async () => {
        await postgres.restart()
        await s.eventually('the PostgresWriter to be gone', async () => { assert.equal(await s.find('postgreswriters', name), undefined) })
        const deletions = await postgres.query('SELECT row_id, deleted_at >= pg_postmaster_start_time() AS after_restart FROM e2e_audit.deletions WHERE row_id = $1', [id])
        assert.deepEqual(deletions, [{ row_id: id, after_restart: true }], 'the row was deleted exactly once, after PostgreSQL came back')
        assert.deepEqual(await rows(), [], 'nothing orphaned')
      })
    })
  })

  it('PostgresWriter: deletionPolicy Orphan keeps the row for the next object of the name; an object that leaves the selector gives its row up until it matches again', { timeout: 600_000 }, async () => {
    await scenario('PostgresWriter policies', 'e2e-postgres-writer-policies', async (s) => {
      const { postgres } = s.env
      const sample = s.sample('postgres-writer.yaml')
      const apply = async (name: string, spec: Record<string, unknown>): Promise<void> => {
        await s.kubectl(['apply', '-n', s.namespace, '-f', '-'], JSON.stringify({ ...sample, metadata: { name }, spec: { ...sample.spec, ...spec } }))
      }
      /** The object's rows, as `<table>: <age>`. */
      const rows = async (name: string): Promise<string[]> => (await rowsOf(postgres, `${s.namespace}/${name}`)).map((row) => `${row.table}: ${row.age}`)
      const writer = async (name: string): Promise<KubeObject> => await s.get('postgreswriters', name)
      const table = sample.spec.table as string
      const age = sample.spec.age as number

      await s.step('apply one object with deletionPolicy Orphan, one without: both rows written; the API server defaults the policy to Delete', async () => {
        await apply('orphan', { deletionPolicy: 'Orphan' })
        await apply('default', {})
        await s.eventually('both rows and Ready=True', async () => {
          assert.deepEqual([await rows('orphan'), await rows('default')], [[`${table}: ${age}`], [`${table}: ${age}`]])
          assertReady(await writer('orphan'), 'True', 'RowWritten')
          assertReady(await writer('default'), 'True', 'RowWritten')
        })
        assert.equal((await writer('default')).spec.deletionPolicy, 'Delete')
      })

      await s.step('a row changed, then deleted, by hand: the next resync writes it again, and the status says so', async () => {
        for (const [change, reason] of [[`UPDATE public."${table}" SET age = 99 WHERE id = $1`, 'RowChanged'], [`DELETE FROM public."${table}" WHERE id = $1`, 'RowMissing']]) {
          await postgres.query(change as string, [`${s.namespace}/default`])
          await s.eventually(`the row repaired, status.lastDriftRepair ${reason}`, async () => {
            assert.deepEqual(await rows('default'), [`${table}: ${age}`])
            const object = await writer('default')
            assertReady(object, 'True', 'RowWritten')
            assert.equal(object.status.lastDriftRepair?.reason, reason, JSON.stringify(object.status))
          })
        }
      })

      const DETACHED = 'e2e.example.com/detached'
      await s.step('the DecoratorController selects only objects without a label; both objects get it: Delete gives its row up, Orphan keeps it', async () => {
        await s.kubectl(['patch', 'decoratorcontroller', 'postgres-writer', '--type', 'merge', '-p',
          JSON.stringify({ spec: { resources: [{ apiVersion: sample.apiVersion, resource: 'postgreswriters', labelSelector: { matchExpressions: [{ key: DETACHED, operator: 'DoesNotExist' }] } }] } })])
        for (const name of ['orphan', 'default']) await s.kubectl(['label', 'postgreswriters', name, '-n', s.namespace, `${DETACHED}=true`])
        await s.eventually('the finalize of both, not deleting them', async () => {
          const [orphan, deleted] = [await writer('orphan'), await writer('default')]
          assertReady(orphan, 'False', 'RowOrphaned')
          assertReady(deleted, 'False', 'RowDeleted')
          for (const object of [orphan, deleted]) {
            assert.equal(object.metadata.deletionTimestamp, undefined)
            assert.deepEqual(object.metadata.finalizers ?? [], [], 'Metacontroller took its finalizer away')
            assert.equal(typeof object.status.releaseToken, 'string')
          }
          assert.deepEqual([await rows('orphan'), await rows('default')], [[`${table}: ${age}`], []])
        })
      })

      await s.step('the label goes: both objects match again, and each writes its row', async () => {
        for (const name of ['orphan', 'default']) await s.patch('postgreswriters', name, { metadata: { labels: { [DETACHED]: null } }, spec: { age: age + 1 } })
        await s.eventually('both rows at the new age, Ready=True', async () => {
          assert.deepEqual([await rows('orphan'), await rows('default')], [[`${table}: ${age + 1}`], [`${table}: ${age + 1}`]])
          for (const name of ['orphan', 'default']) {
            const object = await writer(name)
            assertReady(object, 'True', 'RowWritten')
            assert.equal(object.status.releaseToken, undefined)
          }
        })
        await s.kubectl(['patch', 'decoratorcontroller', 'postgres-writer', '--type', 'merge', '-p',
          JSON.stringify({ spec: { resources: [{ apiVersion: sample.apiVersion, resource: 'postgreswriters' }] } })])
      })

      await s.step('delete both: the Orphan object\'s row stays, the other\'s goes', async () => {
        for (const name of ['orphan', 'default']) await s.delete('postgreswriters', name)
        await s.eventually('both objects gone', async () => {
          assert.equal(await s.find('postgreswriters', 'orphan'), undefined)
          assert.equal(await s.find('postgreswriters', 'default'), undefined)
        })
        assert.deepEqual([await rows('orphan'), await rows('default')], [[`${table}: ${age + 1}`], []])
      })

      await s.step('a new object of the Orphan one\'s name takes the row over, and deletes it when it goes', async () => {
        await apply('orphan', { age: age + 2, table: 'graduates' })
        await s.eventually('the row moved into graduates, at the new age', async () => {
          assert.deepEqual(await rows('orphan'), [`graduates: ${age + 2}`])
          assertReady(await writer('orphan'), 'True', 'RowWritten')
        })
        await s.delete('postgreswriters', 'orphan')
        await s.eventually('the object gone', async () => { assert.equal(await s.find('postgreswriters', 'orphan'), undefined) })
        assert.deepEqual(await rows('orphan'), [])
      })
    })
  })

  it('BookStore: five kinds of children, claims resized in place, Ready from the children, garbage-collected', { timeout: 600_000 }, async () => {
    await scenario('BookStore', 'e2e-bookstore', async (s) => {
      const STORAGE_CLASS = 'e2e-expandable'
      const parentName = 'example-bookstore'
      const db = `${parentName}-mongodb`
      const app = `${parentName}-bookstore`
      const claimName = `data-${db}-0`
      const { bookApp, bookDB } = s.sample('bookstore.yaml').spec

      await s.step('a default StorageClass that allows expansion, and a volume pre-bound to the claim', async () => {
        // No provisioner runs: kube-controller-manager's binder binds the claim to this volume through its claimRef.
        await s.kubectl(['apply', '-f', '-'], JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [{
            apiVersion: 'storage.k8s.io/v1',
            kind: 'StorageClass',
            metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
            provisioner: 'e2e.example.com/none',
            allowVolumeExpansion: true
          }, {
            apiVersion: 'v1',
            kind: 'PersistentVolume',
            metadata: { name: `${s.namespace}-${claimName}` },
            spec: {
              capacity: { storage: bookDB.dbSize },
              accessModes: ['ReadWriteOnce'],
              storageClassName: STORAGE_CLASS,
              persistentVolumeReclaimPolicy: 'Retain',
              hostPath: { path: '/nonexistent/e2e-volume' },
              claimRef: { namespace: s.namespace, name: claimName }
            }
          }]
        }))
      })

      await s.applySample('bookstore.yaml')
      const bookstore = async (): Promise<KubeObject> => await s.get('bookstores', parentName)

      const children = await s.step('apply: the five kinds of children with the spec\'s images, ports and sizes', async () => {
        return await s.eventually('the five children', async () => {
          const [dbService, statefulSet, claim, appService, deployment] = await Promise.all([
            s.get('services', db), s.get('statefulsets', db), s.get('persistentvolumeclaims', claimName), s.get('services', app), s.get('deployments', app)
          ])
          const parent = await bookstore()
          for (const child of [dbService, statefulSet, claim, appService, deployment]) owned(child, parent)
          assert.equal(dbService.spec.clusterIP, 'None')
          assert.deepEqual(dbService.spec.ports.map((p: any) => [p.port, p.targetPort]), [[bookDB.port, bookDB.port]])
          assert.equal(statefulSet.spec.replicas, bookDB.replicas)
          assert.equal(container(statefulSet).image, `${bookDB.repository}:${bookDB.tag}`)
          assert.equal(container(statefulSet).imagePullPolicy, bookDB.imagePullPolicy)
          assert.equal(container(statefulSet).ports[0].containerPort, bookDB.port)
          assert.deepEqual(container(statefulSet).volumeMounts, [{ name: 'data', mountPath: '/data/db' }])
          assert.equal(statefulSet.spec.volumeClaimTemplates[0].spec.resources.requests.storage, bookDB.dbSize)
          assert.equal(claim.spec.resources.requests.storage, bookDB.dbSize)
          assert.equal(appService.spec.type, bookApp.serviceType)
          assert.deepEqual(appService.spec.ports.map((p: any) => [p.port, p.targetPort]), [[bookApp.port, bookApp.targetPort]])
          assert.equal(deployment.spec.replicas, bookApp.replicas)
          assert.equal(container(deployment).image, `${bookApp.repository}:${bookApp.tag}`)
          assert.equal(container(deployment).ports[0].containerPort, bookApp.targetPort)
          const host = `${db}-0.${db}`
          assert.deepEqual(containerEnv(deployment), { MONGODB_HOST: host, MONGODB_PORT: String(bookDB.port), MONGODB_URI: `mongodb://${host}:${bookDB.port}` })
          return { claim, deployment }
        })
      })

      await s.step('the claim is bound to the pre-bound volume', async () => {
        await s.eventually('claim Bound and no VolumeResizePending', async () => {
          const claim = await s.get('persistentvolumeclaims', claimName)
          assert.equal(claim.status?.phase, 'Bound', `claim status: ${JSON.stringify(claim.status)}`)
          const parent = await bookstore()
          assert.equal(condition(parent, 'VolumeResizePending'), undefined, `status: ${JSON.stringify(parent.status)}`)
        })
      })

      await s.step('raise dbSize: the claim is resized in place', async () => {
        await s.patch('bookstores', parentName, { spec: { bookDB: { dbSize: '3Gi' } } })
        await s.eventually('the claim requesting 3Gi', async () => {
          const claim = await s.get('persistentvolumeclaims', claimName)
          assert.equal(claim.spec.resources.requests.storage, '3Gi')
          assert.equal(claim.metadata.uid, children.claim.metadata.uid, 'the claim was replaced, not resized')
          assert.equal((await bookstore()).status?.db?.volumeSize, '3Gi')
        })
        const statefulSet = await s.get('statefulsets', db)
        assert.equal(statefulSet.spec.volumeClaimTemplates[0].spec.resources.requests.storage, bookDB.dbSize, 'the claim template is immutable')
      })

      await s.step('change the app\'s tag and replicas: the Deployment is updated', async () => {
        await s.patch('bookstores', parentName, { spec: { bookApp: { tag: 'v2', replicas: 2 } } })
        await s.eventually('the Deployment with tag v2 and 2 replicas', async () => {
          const deployment = await s.get('deployments', app)
          assert.equal(container(deployment).image, `${bookApp.repository}:v2`)
          assert.equal(deployment.spec.replicas, 2)
          assert.equal(deployment.metadata.uid, children.deployment.metadata.uid, 'the Deployment was replaced, not updated')
        })
      })

      await s.step('children\'s status patched to ready: BookStore Ready=True', async () => {
        // No deployment or statefulset controller and no kubelet run: the test plays their part.
        const deployment = await s.get('deployments', app)
        await s.patch('deployments', app, { status: { observedGeneration: deployment.metadata.generation, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 } }, 'status')
        const statefulSet = await s.get('statefulsets', db)
        await s.patch('statefulsets', db, { status: { observedGeneration: statefulSet.metadata.generation, replicas: 1, currentReplicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 } }, 'status')
        await s.eventually('BookStore Ready=True', async () => {
          const parent = await bookstore()
          assertReady(parent, 'True', 'ReplicasReady')
          assert.deepEqual([parent.status.app.readyReplicas, parent.status.db.readyReplicas], [2, 1])
        })
      })

      await s.step('stable for three resync periods', async () => {
        process.stderr.write(`[e2e]   ${await s.assertStable([{ controller: 'bookstore', resource: 'bookstores', name: parentName }], { children: 'services,statefulsets,persistentvolumeclaims,deployments' })}\n`)
      })

      await s.step('delete: the children are garbage-collected', async () => {
        await s.delete('bookstores', parentName)
        await s.eventually('no Service, StatefulSet, claim or Deployment left', async () => {
          const left = await s.list('services,statefulsets,persistentvolumeclaims,deployments')
          assert.deepEqual(left.map((o) => `${o.kind}/${o.metadata.name}`), [])
        })
      })
    })
  })

  it('PulsarConsumer: a Deployment with the three env vars, labels and replicas changed under a fixed selector', { timeout: 600_000 }, async () => {
    await scenario('PulsarConsumer', 'e2e-pulsar-consumer', async (s) => {
      const sample = await s.applySample('pulsar-consumer.yaml')
      const name = sample.metadata.name
      const deploymentName = `${name}-deployment`
      const selector = { matchLabels: { pulsarcrd: `${name}-pulsarcrd` } }
      /** The printer columns of `kubectl get pulsarconsumers <name>`, by header. */
      const columns = async (): Promise<Record<string, string>> => {
        const [header = '', row = ''] = (await s.kubectl(['get', 'pulsarconsumers', name, '-n', s.namespace])).trim().split('\n')
        const values = row.split(/\s{2,}/)
        return Object.fromEntries(header.split(/\s{2,}/).map((title, i) => [title, values[i] ?? '']))
      }

      const created = await s.step('apply: a Deployment with the three env vars', async () => {
        return await s.eventually('the Deployment', async () => {
          const deployment = await s.get('deployments', deploymentName)
          owned(deployment, await s.get('pulsarconsumers', name))
          assert.equal(container(deployment).name, 'pulsarconsumer')
          assert.equal(container(deployment).image, 'krvarma/pulsarconsumer:latest')
          assert.deepEqual(containerEnv(deployment), {
            PULSAR_SERVER: sample.spec.serverAddress, PULSAR_TOPIC: sample.spec.topic, PULSAR_SUBSCRIPTION_NAME: sample.spec.subscriptionName
          })
          assert.equal(deployment.spec.replicas, sample.spec.replicas)
          assert.deepEqual(deployment.spec.selector, selector)
          assert.equal(deployment.metadata.labels?.app, sample.metadata.labels?.app)
          return deployment
        })
      })

      await s.step('status printer columns filled', async () => {
        await s.eventually('Server, Topic, Subscription, Replicas and Ready columns', async () => {
          const row = await columns()
          assert.deepEqual([row.SERVER, row.TOPIC, row.SUBSCRIPTION, row.REPLICAS],
            [sample.spec.serverAddress, sample.spec.topic, sample.spec.subscriptionName, String(sample.spec.replicas)], JSON.stringify(row))
          assert.match(row.READY ?? '', /^(True|False)$/, JSON.stringify(row))
        })
      })

      await s.step('change labels and replicas: replicas and labels applied, selector unchanged', async () => {
        await s.patch('pulsarconsumers', name, { metadata: { labels: { app: 'pulsarconsumer-v2', team: 'streaming' } }, spec: { replicas: 3 } })
        await s.eventually('the Deployment with 3 replicas and the new labels', async () => {
          const deployment = await s.get('deployments', deploymentName)
          assert.equal(deployment.spec.replicas, 3)
          for (const labels of [deployment.metadata.labels, deployment.spec.template.metadata.labels]) {
            assert.deepEqual([labels?.app, labels?.team, labels?.pulsarcrd], ['pulsarconsumer-v2', 'streaming', `${name}-pulsarcrd`], JSON.stringify(labels))
          }
          assert.deepEqual(deployment.spec.selector, selector)
          assert.equal(deployment.metadata.uid, created.metadata.uid, 'the Deployment was replaced, not updated')
          assert.equal((await columns()).REPLICAS, '3')
        })
      })

      await s.step('stable for three resync periods', async () => {
        process.stderr.write(`[e2e]   ${await s.assertStable([{ controller: 'pulsar-consumer', resource: 'pulsarconsumers', name }], { children: 'deployments' })}\n`)
      })
    })
  })

  it('PodSet: pods -0..-n, scaling removes the highest ordinals, status follows', { timeout: 600_000 }, async () => {
    await scenario('PodSet', 'e2e-podset', async (s) => {
      await s.env.cluster.waitForDefaultServiceAccount(s.namespace, 60_000)
      const sample = await s.applySample('podset.yaml')
      const name = sample.metadata.name
      const podNames = (count: number): string[] => Array.from({ length: count }, (_, i) => `${name}-pod-${i}`)
      const uids = new Map<string, string>()
      /** Waits until exactly `count` pods exist, all Pending (no scheduler, no kubelet), and the status counts them. */
      const expectPods = async (count: number): Promise<void> => {
        await s.eventually(`${count} pods and status readyReplicas ${count}`, async () => {
          const parent = await s.get('podsets', name)
          const pods = (await s.list('pods')).filter((pod) => pod.metadata.ownerReferences?.some((o) => o.uid === parent.metadata.uid))
          assert.deepEqual(pods.map((pod) => pod.metadata.name).sort(), podNames(count).sort())
          for (const pod of pods) {
            assert.equal(pod.status?.phase, 'Pending')
            const before = uids.get(pod.metadata.name)
            assert.ok(before === undefined || before === pod.metadata.uid, `${pod.metadata.name} was re-created`)
            uids.set(pod.metadata.name, pod.metadata.uid)
          }
          assert.equal(parent.status?.readyReplicas, count, `status: ${JSON.stringify(parent.status)}`)
          assert.deepEqual(parent.status?.podNames, podNames(count))
          assertReady(parent, 'True', 'PodsAvailable')
        })
      }

      await s.step('apply the sample (empty spec): one pod', async () => { await expectPods(1) })
      await s.step('replicas 3: pods -0..-2', async () => {
        await s.patch('podsets', name, { spec: { replicas: 3 } })
        await expectPods(3)
      })
      await s.step('scale to 5: pods -3 and -4 added', async () => {
        await s.patch('podsets', name, { spec: { replicas: 5 } })
        await expectPods(5)
      })
      await s.step('scale to 1: the highest ordinals removed', async () => {
        await s.patch('podsets', name, { spec: { replicas: 1 } })
        await expectPods(1)
      })
      await s.step('stable for three resync periods', async () => {
        process.stderr.write(`[e2e]   ${await s.assertStable([{ controller: 'podset', resource: 'podsets', name }], { children: 'pods' })}\n`)
      })
    })
  })
  it('every CompositeController that answers offline, with its example: the children its hook answers, owned by it, stable, and gone with it', { timeout: 600_000 }, async () => {
    await scenario('Examples', 'e2e-examples', async (s) => {
      await s.env.cluster.waitForDefaultServiceAccount(s.namespace, 60_000)
      const composites = controllers.filter((c): c is Extract<Controller, { type: 'composite' }> => c.type === 'composite' && answersFromRequestAlone(c))
      const children = [...new Set(composites.flatMap((c) => c.childResources.map((child) => child.resource)))].join(',')
      const parents = await s.step(`apply the examples of ${composites.map((c) => c.name).join(', ')}`, async () => {
        return await Promise.all(composites.map(async (controller) => ({ controller, name: (await s.applySample(`${controller.name}.yaml`)).metadata.name })))
      })
      /** The children of a parent, as `Kind/name`. */
      const ownedBy = async (parent: KubeObject): Promise<string[]> => (await s.list(children))
        .filter((child) => child.metadata.ownerReferences?.some((owner) => owner.uid === parent.metadata.uid && owner.controller === true))
        .map((child) => `${child.kind}/${child.metadata.name}`).sort()

      await s.step('each has the children its hook answers for it', async () => {
        for (const { controller, name } of parents) {
          await s.eventually(`the children of ${controller.resource.kind} ${name}`, async () => {
            const parent = await s.get(controller.resource.plural, name)
            const answer = await syncAnswer(controller, { controller: {}, parent, children: {}, related: {}, finalizing: false }, () => new Date())
            assert.equal(answer.statusCode, 200, JSON.stringify(answer.body))
            assert.deepEqual(await ownedBy(parent), answer.body.children.map((child: KubeObject) => `${child.kind}/${child.metadata.name}`).sort())
          })
        }
      })
      await s.step('stable for three resync periods', async () => {
        process.stderr.write(`[e2e]   ${await s.assertStable(parents.map(({ controller, name }) => ({ controller: controller.name, resource: controller.resource.plural, name })), { children })}\n`)
      })
      await s.step('render --diff of each, from the cluster as it is, plans nothing', async () => {
        for (const { controller, name } of parents) {
          const parent = await s.get(controller.resource.plural, name)
          const { items: selected } = await s.get<{ items: KubeObject[] }>(controller.childResources.map((child) => child.resource).join(','), '-l', `controller-uid=${parent.metadata.uid}`)
          const request = { controller: {}, parent, children: observedChildren(controller, parent, selected, 'the cluster'), related: {}, finalizing: false }
          const answer = await syncAnswer(controller, request, () => new Date())
          const plan = planSync(controller, parent, request.children, answer.body)
          assert.deepEqual([plan.delete, plan.create, plan.update, plan.recreate, plan.leftAsIs, plan.status, plan.errors], [[], [], [], [], [], [], []], `${controller.name}: ${JSON.stringify(plan)}`)
        }
      })
      await s.step('delete: the children are garbage-collected', async () => {
        const deleted = await Promise.all(parents.map(async ({ controller, name }) => await s.get(controller.resource.plural, name)))
        for (const { controller, name } of parents) await s.delete(controller.resource.plural, name)
        await s.eventually('no child left', async () => {
          for (const parent of deleted) assert.deepEqual(await ownedBy(parent), [], `${parent.kind}/${parent.metadata.name}`)
        })
      })
    })
  })

  it('kubectl apply: the API server refuses every spec the hooks would refuse, saying why, and accepts the edges of what they take', { timeout: 300_000 }, async () => {
    await scenario('CRD refusals', 'e2e-refusals', async (s) => {
      await s.step(`${refusedResources.length} refused resources`, async () => {
        for (const refused of refusedResources) {
          const where = `${refused.controller}: ${refused.what}`
          const error = await s.kubectl(['apply', '-n', s.namespace, '-f', '-'], resourceJson(refused)).then(() => undefined, (e: Error) => e.message)
          assert.ok(error !== undefined, `${where}: the API server accepted it`)
          assert.match(error, refused.apiServer, where)
        }
        for (const controller of controllers) assert.deepEqual(await s.list(controller.resource.plural), [], `no ${controller.resource.kind} was stored`)
      })
      await s.step(`${edgeResources.length} resources at the edges, in a server-side dry run`, async () => {
        for (const edge of edgeResources) {
          await s.kubectl(['apply', '--dry-run=server', '-n', s.namespace, '-f', '-'], JSON.stringify(edge.resource))
            .catch((error: Error) => { assert.fail(`${edge.controller}: ${edge.what}: refused: ${error.message}`) })
        }
      })
    })
  })
})
