/**
 * `npm run plan` predicts, then the rig verifies: with Metacontroller stopped, the plan says what it would do; once
 * Metacontroller has run and settled, what changed in the cluster and in PostgreSQL is exactly that, nothing more and
 * nothing less. The plan runs as the identity of manifests/plan (get and list only), with a PostgreSQL user that may
 * only read, and leaves every resourceVersion and every row's xmin as it found them.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { stringify } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { PLAN_IDENTITY } from '../../dev/manifests.js'
import type { ClusterPlan } from '../../dev/plan/plan-cluster.js'
import { describe as describeRef, refOf, type ObjectPlan, type ParentPlan } from '../../dev/plan/parent-plan.js'
import { repositoryCopy } from '../helpers/repository-copy.js'
import { startEnvironment, type Environment } from './environment.js'
import { planDifferences, type Objects, type Rows } from './plan-outcome.js'
import { inNewNamespace, sampleResource, type Scenario, type KubeObject, type Parent } from './scenario.js'

const root = join(import.meta.dirname, '..', '..')
const tsx = import.meta.resolve('tsx')
const CHILD_KINDS = 'pods,services,statefulsets,persistentvolumeclaims,deployments'
const KINDS = `podsets,bookstores,pulsarconsumers,postgreswriters,${CHILD_KINDS}`
const STORAGE_CLASS = 'e2e-expandable'

let environment: Environment | undefined
let planKubeconfig = ''
let planDatabaseUrl = ''
const scratch = mkdtempSync(join(tmpdir(), 'e2e-plan-'))

function env (): Environment {
  assert.ok(environment !== undefined, 'the end-to-end environment did not start')
  return environment
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

interface PlanRun { code: number | null, plan: ClusterPlan | undefined, stdout: string, stderr: string, ms: number }

/** `npm run plan` of a checkout, as the plan's identity, with the read-only PostgreSQL user. */
async function runPlan (checkout: string, args: string[]): Promise<PlanRun> {
  const t0 = Date.now()
  const { NODE_TEST_CONTEXT: _, ...inherited } = process.env
  const child = spawn(process.execPath, ['--import', tsx, join(checkout, 'scripts', 'plan.ts'), '--kubeconfig', planKubeconfig, ...args], {
    cwd: checkout,
    env: { ...inherited, DATABASE_URL: planDatabaseUrl },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  let plan: ClusterPlan | undefined
  try {
    plan = args.includes('json') ? JSON.parse(stdout) as ClusterPlan : undefined
  } catch { /* not JSON: the assertion on it shows stdout */ }
  return { code, plan, stdout, stderr, ms: Date.now() - t0 }
}

/** Every object of the kinds the controllers read or write, in the namespace, by `Kind namespace/name`. */
async function objectsIn (s: Scenario): Promise<Objects> {
  return new Map((await s.list(KINDS)).map((object) => [describeRef(refOf(object)), object]))
}

/** PostgresWriter's rows (every table of schema public with an age column), with their xmin. */
async function rowsIn (postgres: Environment['postgres']): Promise<Rows> {
  const rows: Rows = new Map()
  const tables = await postgres.query<{ table_name: string }>("SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'age' ORDER BY table_name")
  for (const { table_name: table } of tables) {
    for (const row of await postgres.query<{ id: string, name: unknown, age: unknown, country: unknown, xmin: string }>(`SELECT id, name, age, country, xmin::text AS xmin FROM public."${table}"`)) {
      rows.set(`${table} ${row.id}`, { name: row.name, age: row.age, country: row.country, xmin: row.xmin })
    }
  }
  return rows
}

/** Every row of every table of schema public, the hook's own included, with its xmin. */
async function everyRow (postgres: Environment['postgres']): Promise<string[]> {
  const tables = await postgres.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
  const rows: string[] = []
  for (const { tablename } of tables) {
    for (const row of await postgres.query(`SELECT xmin::text AS xmin, * FROM public."${tablename}" ORDER BY 2`)) rows.push(`${tablename} ${JSON.stringify(row)}`)
  }
  return rows
}

const resourceVersions = (objects: Objects): Record<string, string> => Object.fromEntries([...objects].map(([key, object]) => [key, object.metadata.resourceVersion]))

/** The plan, the cluster and the rows around it: nothing the plan read has changed. */
async function planUntouched (s: Scenario, run: () => Promise<PlanRun>): Promise<{ run: PlanRun, before: Objects, rows: Rows }> {
  const before = await objectsIn(s)
  const rows = await rowsIn(s.env.postgres)
  const allRows = await everyRow(s.env.postgres)
  const planned = await run()
  assert.deepEqual(resourceVersions(await objectsIn(s)), resourceVersions(before), 'the plan changed a resourceVersion')
  assert.deepEqual(await everyRow(s.env.postgres), allRows, 'the plan changed a row (or its xmin)')
  return { run: planned, before, rows }
}

function objectAction (plan: ClusterPlan, parent: string, object: string): ObjectPlan | undefined {
  return parentPlan(plan, parent)?.objects.find((candidate) => describeRef(candidate.object) === object)
}

function parentPlan (plan: ClusterPlan, parent: string): ParentPlan | undefined {
  return plan.controllers.flatMap((controller) => controller.parents).find((candidate) => describeRef(candidate.parent) === parent)
}

function named (object: KubeObject, name: string, spec: Record<string, unknown>): KubeObject {
  const merge = (base: any, patch: any): any => typeof patch === 'object' && patch !== null && !Array.isArray(patch)
    ? Object.fromEntries([...new Set([...Object.keys(base ?? {}), ...Object.keys(patch)])].map((key) => [key, key in patch ? merge(base?.[key], patch[key]) : base[key]]))
    : patch
  return { ...object, metadata: { ...object.metadata, name }, spec: merge(object.spec, spec) } as KubeObject
}

async function scenario (namespace: string, body: (s: Scenario) => Promise<void>): Promise<void> {
  await inNewNamespace(env(), namespace, body)
}

/** The parents, for the stability check: each with the controller that serves it. */
function parentsOf (objects: KubeObject[]): Parent[] {
  return objects.map((object) => {
    const controller = controllers.find((candidate) => candidate.resource.kind === object.kind)
    assert.ok(controller !== undefined, object.kind)
    return { controller: controller.name, resource: controller.resource.plural, name: object.metadata.name }
  })
}

/** Metacontroller started: waits until it has settled (nothing changes over three resync periods). */
async function settle (s: Scenario, parents: Parent[]): Promise<void> {
  process.stderr.write(`[e2e]   ${await s.assertStable(parents, { children: CHILD_KINDS, fingerprint: async () => [...await rowsIn(s.env.postgres)] })}\n`)
}

describe('npm run plan on kube-apiserver, kube-controller-manager and Metacontroller: what it says is what happens', () => {
  before(async () => {
    const t0 = Date.now()
    environment = await startEnvironment()
    const { cluster, postgres } = environment
    await cluster.kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
      provisioner: 'e2e.example.com/none',
      allowVolumeExpansion: true
    }))
    // The plan's identity: manifests/plan's ServiceAccount and its get-and-list ClusterRole, and a token of it.
    await cluster.kubectl(['apply', '-k', join(root, 'manifests', 'plan')])
    const token = (await cluster.kubectl(['create', 'token', PLAN_IDENTITY.name, '-n', PLAN_IDENTITY.namespace, '--duration=4h'])).trim()
    planKubeconfig = join(scratch, 'kubeconfig')
    writeFileSync(planKubeconfig, stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'rig', cluster: { server: cluster.server, 'certificate-authority': cluster.caFile } }],
      users: [{ name: 'plan', user: { token } }],
      contexts: [{ name: 'plan', context: { cluster: 'rig', user: 'plan' } }],
      'current-context': 'plan'
    }), { mode: 0o600 })
    // A PostgreSQL user that may only read, also the tables the hook server creates later.
    await postgres.query(`CREATE ROLE plan_reader LOGIN PASSWORD 'plan-reader';
      GRANT USAGE ON SCHEMA public TO plan_reader;
      GRANT SELECT ON ALL TABLES IN SCHEMA public TO plan_reader;
      ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO plan_reader;`)
    const url = new URL(postgres.connectionString)
    url.username = 'plan_reader'
    url.password = 'plan-reader'
    planDatabaseUrl = url.toString()
    process.stderr.write(`[e2e] environment ready in ${seconds(Date.now() - t0)} (Metacontroller ${cluster.metacontrollerVersion ?? cluster.metacontroller?.binary}, hooks ${environment.hookVersion}); logs in ${cluster.logsDir}\n`)
  }, { timeout: 300_000 })

  after(async () => {
    await environment?.stop()
    rmSync(scratch, { recursive: true, force: true })
  }, { timeout: 60_000 })

  it('spec changes: a scale-down, a new image, a volume resized and one not shrunk, more replicas, a row moved and a row changed', { timeout: 900_000 }, async () => {
    await scenario('e2e-plan-spec', async (s) => {
      const { cluster } = s.env
      await cluster.waitForDefaultServiceAccount(s.namespace, 60_000)
      const bookstore = sampleResource('bookstore.yaml')
      const parents = [
        named(sampleResource('podset.yaml'), 'scale', { replicas: 3 }),
        named(sampleResource('podset.yaml'), 'image', { replicas: 2 }),
        named(bookstore, 'resize', {}),
        named(bookstore, 'shrink', {}),
        named(sampleResource('pulsar-consumer.yaml'), 'consumer', { replicas: 1 }),
        named(sampleResource('postgres-writer.yaml'), 'mover', {}),
        named(sampleResource('postgres-writer.yaml'), 'ager', {})
      ]
      await s.step('apply the parents, with a volume pre-bound to each BookStore claim, and let Metacontroller settle', async () => {
        const volumes = ['resize', 'shrink'].map((name) => ({
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name: `${s.namespace}-data-${name}-mongodb-0` },
          spec: {
            capacity: { storage: bookstore.spec.bookDB.dbSize },
            accessModes: ['ReadWriteOnce'],
            storageClassName: STORAGE_CLASS,
            persistentVolumeReclaimPolicy: 'Retain',
            hostPath: { path: '/nonexistent/e2e-volume' },
            claimRef: { namespace: s.namespace, name: `data-${name}-mongodb-0` }
          }
        }))
        await s.kubectl(['apply', '-n', s.namespace, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...volumes, ...parents] }))
        await s.eventually('the claims bound, the pods and the rows there', async () => {
          for (const name of ['resize', 'shrink']) assert.equal((await s.get('persistentvolumeclaims', `data-${name}-mongodb-0`)).status?.phase, 'Bound')
          assert.equal((await s.list('pods')).length, 5)
          assert.equal((await rowsIn(s.env.postgres)).size, 2)
        })
        await settle(s, parentsOf(parents))
      })

      await cluster.stopMetacontroller()
      await s.step('with Metacontroller stopped, change the parents', async () => {
        await s.patch('podsets', 'scale', { spec: { replicas: 1 } })
        await s.patch('podsets', 'image', { spec: { image: 'busybox:1.37' } })
        await s.patch('bookstores', 'resize', { spec: { bookDB: { dbSize: '3Gi' } } })
        await s.patch('bookstores', 'shrink', { spec: { bookDB: { dbSize: '1Gi' } } })
        await s.patch('pulsarconsumers', 'consumer', { spec: { replicas: 3 } })
        await s.patch('postgreswriters', 'mover', { spec: { table: 'graduates' } })
        await s.patch('postgreswriters', 'ager', { spec: { age: 24 } })
      })

      const { run, before, rows } = await s.step('plan, as the plan\'s identity: nothing it read changes', async () => {
        const text = await runPlan(root, ['-n', s.namespace])
        assert.equal(text.code, 1, `${text.stdout}\n${text.stderr}`)
        process.stderr.write(`[e2e]   the plan (${seconds(text.ms)}):\n${text.stdout}\n`)
        return await planUntouched(s, async () => await runPlan(root, ['-n', s.namespace, '-o', 'json']))
      })
      const plan = run.plan
      assert.ok(plan !== undefined, `${run.stdout}\n${run.stderr}`)
      assert.equal(run.code, 1, run.stderr)

      await s.step('the plan says what each change does', async () => {
        const ns = s.namespace
        assert.deepEqual(plan.errors, [])
        assert.equal(objectAction(plan, `PodSet ${ns}/scale`, `Pod ${ns}/scale-pod-2`)?.action, 'delete')
        assert.equal(objectAction(plan, `PodSet ${ns}/scale`, `Pod ${ns}/scale-pod-1`)?.action, 'delete')
        assert.equal(objectAction(plan, `PodSet ${ns}/scale`, `Pod ${ns}/scale-pod-0`)?.action, 'unchanged')
        assert.equal(objectAction(plan, `PodSet ${ns}/image`, `Pod ${ns}/image-pod-0`)?.action, 'recreate')
        assert.equal(objectAction(plan, `PodSet ${ns}/image`, `Pod ${ns}/image-pod-1`)?.action, 'recreate')
        const claim = objectAction(plan, `BookStore ${ns}/resize`, `PersistentVolumeClaim ${ns}/data-resize-mongodb-0`)
        assert.deepEqual(claim?.fields?.find((field) => field.field === 'spec.resources.requests.storage'), { field: 'spec.resources.requests.storage', from: '2Gi', to: '3Gi' })
        assert.equal(objectAction(plan, `BookStore ${ns}/shrink`, `PersistentVolumeClaim ${ns}/data-shrink-mongodb-0`)?.action, 'unchanged')
        assert.ok(parentPlan(plan, `BookStore ${ns}/shrink`)?.status.some((field) => field.field.startsWith('conditions[type=VolumeShrinkRefused]')))
        assert.equal(objectAction(plan, `PulsarConsumer ${ns}/consumer`, `Deployment ${ns}/consumer-deployment`)?.action, 'update')
        assert.deepEqual(parentPlan(plan, `PostgresWriter ${ns}/mover`)?.rows.map((effect) => `${effect.action} ${'table' in effect ? effect.table : ''}`), ['createTable public.graduates', 'insert public.graduates', 'delete public.students'])
        assert.deepEqual(parentPlan(plan, `PostgresWriter ${ns}/ager`)?.rows, [{ action: 'update', table: 'public.students', id: `${ns}/ager`, columns: { age: { from: 23, to: 24 } } }])
      })

      await s.step('start Metacontroller: once it has settled, the cluster and PostgreSQL changed exactly as planned', async () => {
        await cluster.startMetacontroller()
        await settle(s, parentsOf(parents))
        assert.deepEqual(planDifferences(plan, before, await objectsIn(s), rows, await rowsIn(s.env.postgres)), [])
      })
    })
  })

  it('code changes: a PodSet that labels its pods, a BookStore that changes its Service\'s port', { timeout: 900_000 }, async (t) => {
    const next = await repositoryCopy(t)
    const change = (file: string, from: string, to: string): void => {
      const path = join(next, file)
      const text = readFileSync(path, 'utf8')
      assert.ok(text.includes(from), `${file} no longer has ${from}: update this test's code change`)
      writeFileSync(path, text.replace(from, to))
    }
    change('hooks/podset/sync.ts', "labels: { app: parent.name, version: 'v0.1',", "labels: { app: parent.name, version: 'v0.1', 'e2e.example.com/release': 'next',")
    change('hooks/bookstore/desired-children.ts', "ports: [{ name: 'http', port: app.port, targetPort: app.targetPort, protocol: 'TCP' }]", "ports: [{ name: 'web', port: app.port, targetPort: 'http', protocol: 'TCP' }]")

    await scenario('e2e-plan-code', async (s) => {
      const { cluster } = s.env
      await cluster.waitForDefaultServiceAccount(s.namespace, 60_000)
      const parents = [named(sampleResource('podset.yaml'), 'labelled', { replicas: 2 }), named(sampleResource('bookstore.yaml'), 'ported', {})]
      await s.step('apply the parents and let Metacontroller settle with this checkout\'s hooks', async () => {
        await cluster.startMetacontroller()
        await s.kubectl(['apply', '-n', s.namespace, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: parents }))
        await s.eventually('the pods and the Service', async () => {
          assert.equal((await s.list('pods')).length, 2)
          await s.get('services', 'ported-bookstore')
        })
        await settle(s, parentsOf(parents))
      })

      await cluster.stopMetacontroller()
      const { run, before, rows } = await s.step('plan from the changed checkout: nothing it read changes', async () => {
        return await planUntouched(s, async () => await runPlan(next, ['-n', s.namespace, '-o', 'json']))
      })
      const plan = run.plan
      assert.ok(plan !== undefined, `${run.stdout}\n${run.stderr}`)
      assert.equal(run.code, 1, run.stderr)
      const ns = s.namespace
      for (const pod of ['labelled-pod-0', 'labelled-pod-1']) {
        const planned = objectAction(plan, `PodSet ${ns}/labelled`, `Pod ${ns}/${pod}`)
        assert.equal(planned?.action, 'recreate', JSON.stringify(planned))
        assert.ok(planned?.fields?.some((field) => field.field === 'metadata.labels["e2e.example.com/release"]'), JSON.stringify(planned))
      }
      const service = objectAction(plan, `BookStore ${ns}/ported`, `Service ${ns}/ported-bookstore`)
      assert.equal(service?.action, 'update', JSON.stringify(service))

      await s.step('switch the hook server to the changed checkout, start Metacontroller: the cluster changes exactly as planned', async () => {
        await s.env.switchHookServer(next)
        try {
          await cluster.startMetacontroller()
          await settle(s, parentsOf(parents))
          assert.deepEqual(planDifferences(plan, before, await objectsIn(s), rows, await rowsIn(s.env.postgres)), [])
        } finally {
          await s.env.switchHookServer(root)
        }
      })
    })
  })

  it('1,000 parents: planned in one run, nothing to change once Metacontroller has settled', { timeout: 1_800_000 }, async () => {
    await scenario('e2e-plan-scale', async (s) => {
      const { cluster } = s.env
      await cluster.startMetacontroller()
      await cluster.waitForDefaultServiceAccount(s.namespace, 60_000)
      // 1,000 parents resynced every few seconds would keep Metacontroller and the hook server busy the whole time.
      for (const controller of controllers) {
        await s.kubectl(['patch', controller.type === 'composite' ? 'compositecontroller' : 'decoratorcontroller', controller.name, '--type', 'merge', '-p', JSON.stringify({ spec: { resyncPeriodSeconds: 600 } })])
      }
      const kinds = ['podset.yaml', 'bookstore.yaml', 'pulsar-consumer.yaml', 'postgres-writer.yaml']
      const parents = Array.from({ length: 1000 }, (_, i) => named(sampleResource(kinds[i % 4] as string), `p${String(i).padStart(4, '0')}`, {}))
      await s.step('create 1,000 parents: 250 of each controller', async () => {
        await s.kubectl(['create', '-n', s.namespace, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: parents }))
      })
      const settled = await s.step('let Metacontroller settle, until the plan has nothing to change', async () => {
        return await s.eventually('a plan that changes nothing', async () => {
          const planned = await runPlan(root, ['-n', s.namespace, '-o', 'json'])
          assert.equal(planned.code, 0, planned.plan === undefined ? planned.stderr : JSON.stringify(planned.plan.controllers.map((c) => [c.controller, c.summary])))
          return planned
        }, 900_000)
      })
      assert.deepEqual(settled.plan?.controllers.map((controller) => [controller.controller, controller.summary.parents]), controllers.map((controller) => [controller.name, 250]))

      await cluster.stopMetacontroller()
      const timed = await s.step('plan 1,000 parents with Metacontroller stopped', async () => await runPlan(root, ['-n', s.namespace]))
      assert.equal(timed.code, 0, timed.stderr)
      process.stderr.write(`[e2e]   1,000 parents planned in ${seconds(timed.ms)} (the whole command):\n${timed.stdout}\n`)
      await cluster.startMetacontroller()
    })
  })
})
