import type { Deployment, StatefulSet } from 'kubernetes-types/apps/v1.js'
import type { Container, PersistentVolumeClaim, Service } from 'kubernetes-types/core/v1.js'
import type { ObjectMeta } from 'kubernetes-types/meta/v1.js'
import { HookError, MAX_OBSERVED_DEPTH, nestsDeeperThan, recommendedLabels, type KubernetesObject, type ParentMetadata } from '../framework/index.js'
import { CLAIM_TEMPLATE_NAME, type ClaimPlan, type VolumePlan } from './claims.js'
import type { BookStoreSpec } from './resource.js'

/**
 * The desired children of a BookStore, built from its spec alone (plus the two immutable things the API server
 * already holds: the StatefulSet's claim templates and each claim's storage class).
 */

type ObservedStatefulSet = KubernetesObject & StatefulSet

const APP_NAME = 'bookstore'
const DATA_MOUNT_PATH = '/data/db'
type Component = 'app' | 'database'

export interface ChildNames {
  /** The app Service and Deployment. */
  app: string
  /** The headless database Service and the StatefulSet. */
  db: string
}

export function childNames (parentName: string): ChildNames {
  return { app: `${parentName}-bookstore`, db: `${parentName}-mongodb` }
}

function labels (instance: string, component: Component): Record<string, string> {
  return recommendedLabels(APP_NAME, instance, component)
}

/** Selectors are immutable on a Deployment or StatefulSet: only labels that never change for this parent. */
const SELECTOR_LABELS = new Set(['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component'])

function selector (instance: string, component: Component): Record<string, string> {
  return Object.fromEntries(Object.entries(labels(instance, component)).filter(([key]) => SELECTOR_LABELS.has(key)))
}

function metadata (parent: ParentMetadata, name: string, component: Component): ObjectMeta & { name: string } {
  const { namespace } = parent
  return { name, ...(namespace === undefined ? {} : { namespace }), labels: labels(parent.name, component) }
}

function image (component: { repository: string, tag: string }): string {
  return `${component.repository}:${component.tag}`
}

function pullPolicy (component: { imagePullPolicy?: Container['imagePullPolicy'] }): Pick<Container, 'imagePullPolicy'> {
  return component.imagePullPolicy === undefined ? {} : { imagePullPolicy: component.imagePullPolicy }
}

/** Objects with their keys sorted at every level, as Metacontroller (Go, unstructured maps) serializes observed ones. */
function sortedKeys<T> (value: T): T {
  if (Array.isArray(value)) return value.map(sortedKeys) as T
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([k, v]) => [k, sortedKeys(v)])) as T
}

/**
 * The StatefulSet's claim templates. They are immutable, so once the StatefulSet exists its observed templates are
 * carried over unchanged (a dbSize change reaches the claims themselves, never the template); copying them whole
 * rather than rebuilding them keeps the 3-way merge equal to the stored object on any API server version. At
 * creation they are written as the API server stores them (kind, volumeMode and status included, keys sorted as
 * Metacontroller sends them back), so that the first answer and every later one are the same bytes.
 * The controller-uid label makes a claim the StatefulSet controller creates first adoptable by the BookStore.
 */
function claimTemplates (parent: ParentMetadata, spec: BookStoreSpec, volumes: VolumePlan, observed: ObservedStatefulSet | undefined): PersistentVolumeClaim[] {
  const observedTemplates = observed?.spec?.volumeClaimTemplates
  if (Array.isArray(observedTemplates)) {
    if (nestsDeeperThan(observedTemplates, MAX_OBSERVED_DEPTH)) {
      throw new HookError(400, `children: StatefulSet ${observed?.metadata.name}'s spec.volumeClaimTemplates nest more than ${MAX_OBSERVED_DEPTH} levels deep, which no API server stores; send the children as Metacontroller observes them`)
    }
    return structuredClone(observedTemplates)
  }
  const { storageClassName } = spec.bookDB
  return [sortedKeys({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: CLAIM_TEMPLATE_NAME,
      labels: {
        ...labels(parent.name, 'database'),
        ...(parent.uid === undefined ? {} : { 'controller-uid': parent.uid })
      }
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: volumes.dbSize } },
      ...(storageClassName === undefined ? {} : { storageClassName }),
      volumeMode: 'Filesystem'
    },
    status: { phase: 'Pending' }
  })]
}

function databaseService (parent: ParentMetadata, spec: BookStoreSpec, names: ChildNames): Service {
  const { port } = spec.bookDB
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(parent, names.db, 'database'),
    spec: {
      clusterIP: 'None',
      selector: selector(parent.name, 'database'),
      ports: [{ name: 'mongodb', port, targetPort: port, protocol: 'TCP' }]
    }
  }
}

function databaseStatefulSet (parent: ParentMetadata, spec: BookStoreSpec, names: ChildNames, volumes: VolumePlan, observed: ObservedStatefulSet | undefined): StatefulSet {
  const instance = parent.name
  const db = spec.bookDB
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: metadata(parent, names.db, 'database'),
    spec: {
      replicas: db.replicas,
      serviceName: names.db,
      selector: { matchLabels: selector(instance, 'database') },
      template: {
        metadata: { labels: labels(instance, 'database') },
        spec: {
          containers: [{
            name: 'mongodb',
            image: image(db),
            ...pullPolicy(db),
            // The official image's entrypoint runs `mongod --port <port> --bind_ip_all` for these arguments.
            args: ['--port', String(db.port)],
            ports: [{ name: 'mongodb', containerPort: db.port, protocol: 'TCP' }],
            volumeMounts: [{ name: CLAIM_TEMPLATE_NAME, mountPath: DATA_MOUNT_PATH }]
          }]
        }
      },
      volumeClaimTemplates: claimTemplates(parent, spec, volumes, observed)
    }
  }
}

function databaseClaim (parent: ParentMetadata, claim: ClaimPlan): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: metadata(parent, claim.name, 'database'),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: claim.storage } },
      ...(claim.storageClassName === undefined ? {} : { storageClassName: claim.storageClassName })
    }
  }
}

function appService (parent: ParentMetadata, spec: BookStoreSpec, names: ChildNames): Service {
  const app = spec.bookApp
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(parent, names.app, 'app'),
    spec: {
      type: app.serviceType,
      selector: selector(parent.name, 'app'),
      ports: [{ name: 'http', port: app.port, targetPort: app.targetPort, protocol: 'TCP' }]
    }
  }
}

/**
 * Without a replica set every mongod is a database of its own, so the app always talks to the first one, by the
 * stable name the headless Service gives it.
 */
function databaseHost (names: ChildNames): string {
  return `${names.db}-0.${names.db}`
}

function appDeployment (parent: ParentMetadata, spec: BookStoreSpec, names: ChildNames): Deployment {
  const instance = parent.name
  const app = spec.bookApp
  const host = databaseHost(names)
  const port = String(spec.bookDB.port)
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(parent, names.app, 'app'),
    spec: {
      replicas: app.replicas,
      selector: { matchLabels: selector(instance, 'app') },
      template: {
        metadata: { labels: labels(instance, 'app') },
        spec: {
          containers: [{
            name: 'bookstore',
            image: image(app),
            ...pullPolicy(app),
            ports: [{ name: 'http', containerPort: app.targetPort, protocol: 'TCP' }],
            env: [
              { name: 'MONGODB_HOST', value: host },
              { name: 'MONGODB_PORT', value: port },
              { name: 'MONGODB_URI', value: `mongodb://${host}:${port}` }
            ]
          }]
        }
      }
    }
  }
}

/** Every child, in a fixed order: database Service, StatefulSet, claims by ordinal, app Service, Deployment. */
export function desiredChildren (
  parent: ParentMetadata,
  spec: BookStoreSpec,
  volumes: VolumePlan,
  observedStatefulSet: ObservedStatefulSet | undefined
): KubernetesObject[] {
  const names = childNames(parent.name)
  const children: Array<Service | StatefulSet | PersistentVolumeClaim | Deployment> = [
    databaseService(parent, spec, names),
    databaseStatefulSet(parent, spec, names, volumes, observedStatefulSet),
    ...volumes.claims.map((claim) => databaseClaim(parent, claim)),
    appService(parent, spec, names),
    appDeployment(parent, spec, names)
  ]
  return children as KubernetesObject[]
}
