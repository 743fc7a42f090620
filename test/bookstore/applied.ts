import { createHash } from 'node:crypto'
import type { KubernetesObject, ObjectMap } from '../../hooks/wire/schemas.js'

/**
 * The children a BookStore sync answered, as Metacontroller later sends them back: with what Metacontroller adds
 * (the controller-uid label, its last-applied annotation, the ownerReference), what the API server adds (uid,
 * resourceVersion, generation, managedFields, defaults, allocated IPs, ports and volumes), a status from the
 * controllers, and keys sorted at every level as Go's JSON encoder writes unstructured objects.
 * Server defaults are those of kube-apiserver v1.36 (checked by decoding and re-encoding these objects with its scheme).
 */

export interface ClusterState {
  /** Ready replicas of the app Deployment and of the database StatefulSet. */
  readyApp: number
  readyDb: number
  /** Stamped on what this apply creates or changes. */
  time: string
  /** The first resourceVersion handed out by this apply. */
  resourceVersion: number
  /** The class the cluster's DefaultStorageClass admission gives a new claim that names none. */
  defaultStorageClass?: string
}

type Json = Record<string, any>

export const GROUPS = ['Service.v1', 'StatefulSet.apps/v1', 'PersistentVolumeClaim.v1', 'Deployment.apps/v1'] as const
const PROVISIONER = 'hostpath.csi.k8s.io'
const NODE = 'worker-1'

export function sortedKeys<T> (value: T): T {
  if (Array.isArray(value)) return value.map(sortedKeys) as T
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([k, v]) => [k, sortedKeys(v)])) as T
}

function digest (text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/** A stable, uuid-shaped id for a name. */
export function uidFor (text: string): string {
  const hex = digest(text)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

function hashNumber (text: string, modulo: number): number {
  return Number.parseInt(digest(text).slice(0, 8), 16) % modulo
}

/** The key the API server gives an item of a list map, or undefined for an atomic list. */
function listKey (item: Json): Json | undefined {
  if (item.containerPort !== undefined) return { containerPort: item.containerPort, protocol: item.protocol ?? 'TCP' }
  if (item.port !== undefined) return { port: item.port, protocol: item.protocol ?? 'TCP' }
  if (item.uid !== undefined) return { uid: item.uid }
  if (item.name !== undefined && item.spec === undefined) return { name: item.name }
  return undefined
}

/** The fieldsV1 of a managedFields entry for the fields of `value`. */
export function fieldsOf (value: unknown, key?: string): Json {
  if (Array.isArray(value)) {
    const keys = value.map((item) => typeof item === 'object' && item !== null ? listKey(item) : undefined)
    if (keys.some((itemKey) => itemKey === undefined)) return {}
    return { '.': {}, ...Object.fromEntries(value.map((item, i) => [`k:${JSON.stringify(keys[i])}`, { '.': {}, ...fieldsOf(item) }])) }
  }
  if (typeof value !== 'object' || value === null) return {}
  // A workload's label selector is an atomic struct; a Service's selector is a map.
  if (key === 'selector' && 'matchLabels' in value) return {}
  const isMap = key !== undefined && ['labels', 'annotations', 'matchLabels', 'requests', 'capacity', 'selector'].includes(key)
  const fields = Object.fromEntries(Object.entries(value).map(([k, v]) => [`f:${k}`, fieldsOf(v, k)]))
  return isMap ? { '.': {}, ...fields } : fields
}

function managedEntry (apiVersion: string, manager: string, time: string, fields: Json, subresource?: string): Json {
  return { apiVersion, fieldsType: 'FieldsV1', fieldsV1: fields, manager, operation: 'Update', ...(subresource === undefined ? {} : { subresource }), time }
}

function templateDefaults (template: Json): Json {
  const spec = template.spec
  return {
    ...template,
    spec: {
      ...spec,
      containers: spec.containers.map((container: Json) => ({
        ...container,
        imagePullPolicy: container.imagePullPolicy ?? (String(container.image).endsWith(':latest') ? 'Always' : 'IfNotPresent'),
        resources: {},
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File'
      })),
      dnsPolicy: 'ClusterFirst',
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      securityContext: {},
      terminationGracePeriodSeconds: 30
    }
  }
}

function revisionHash (object: Json): string {
  return digest(JSON.stringify(sortedKeys(object.spec.template))).slice(0, 10)
}

function deployment (desired: Json, previous: Json | undefined, generation: number, state: ClusterState): Json {
  const replicas: number = desired.spec.replicas
  const ready = state.readyApp
  const templateChanged = previous !== undefined && revisionHash(previous) !== revisionHash(desired)
  const revision = previous === undefined ? 1 : Number(previous.metadata.annotations['deployment.kubernetes.io/revision']) + (templateChanged ? 1 : 0)
  return {
    annotations: { 'deployment.kubernetes.io/revision': String(revision) },
    spec: {
      ...desired.spec,
      progressDeadlineSeconds: 600,
      revisionHistoryLimit: 10,
      strategy: { rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' }, type: 'RollingUpdate' },
      template: templateDefaults(desired.spec.template)
    },
    status: {
      ...(ready > 0 ? { availableReplicas: ready } : {}),
      conditions: [
        ready >= replicas
          ? { lastTransitionTime: state.time, lastUpdateTime: state.time, message: 'Deployment has minimum availability.', reason: 'MinimumReplicasAvailable', status: 'True', type: 'Available' }
          : { lastTransitionTime: state.time, lastUpdateTime: state.time, message: 'Deployment does not have minimum availability.', reason: 'MinimumReplicasUnavailable', status: 'False', type: 'Available' },
        { lastTransitionTime: state.time, lastUpdateTime: state.time, message: `ReplicaSet "${desired.metadata.name}-${revisionHash(desired).slice(0, 10)}" has successfully progressed.`, reason: 'NewReplicaSetAvailable', status: 'True', type: 'Progressing' }
      ],
      observedGeneration: generation,
      ...(ready > 0 ? { readyReplicas: ready } : {}),
      replicas,
      ...(replicas > ready ? { unavailableReplicas: replicas - ready } : {}),
      updatedReplicas: replicas
    }
  }
}

function statefulSet (desired: Json, generation: number, state: ClusterState): Json {
  const replicas: number = desired.spec.replicas
  const ready = state.readyDb
  const revision = `${desired.metadata.name}-${revisionHash(desired)}`
  return {
    spec: {
      ...desired.spec,
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
      podManagementPolicy: 'OrderedReady',
      revisionHistoryLimit: 10,
      template: templateDefaults(desired.spec.template),
      updateStrategy: { rollingUpdate: { partition: 0 }, type: 'RollingUpdate' }
    },
    status: {
      availableReplicas: ready,
      collisionCount: 0,
      ...(replicas > 0 ? { currentReplicas: replicas } : {}),
      currentRevision: revision,
      observedGeneration: generation,
      ...(ready > 0 ? { readyReplicas: ready } : {}),
      replicas,
      updateRevision: revision,
      ...(replicas > 0 ? { updatedReplicas: replicas } : {})
    }
  }
}

function service (desired: Json, previous: Json | undefined): Json {
  const spec = desired.spec
  const type = spec.type ?? 'ClusterIP'
  const name: string = desired.metadata.name
  const clusterIP = spec.clusterIP ?? previous?.spec.clusterIP ?? `10.96.${hashNumber(`${name}/a`, 256)}.${1 + hashNumber(`${name}/b`, 254)}`
  const ports = spec.ports.map((port: Json) => {
    if (type === 'ClusterIP') return port
    const kept = previous?.spec.ports?.find((old: Json) => old.port === port.port)?.nodePort
    return { ...port, nodePort: kept ?? 30000 + hashNumber(`${name}/${port.port}`, 2768) }
  })
  return {
    spec: {
      ...spec,
      ...(type === 'LoadBalancer' ? { allocateLoadBalancerNodePorts: true } : {}),
      clusterIP,
      clusterIPs: [clusterIP],
      ...(type === 'ClusterIP' ? {} : { externalTrafficPolicy: 'Cluster' }),
      internalTrafficPolicy: 'Cluster',
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      ports,
      sessionAffinity: 'None',
      type
    },
    status: { loadBalancer: {} }
  }
}

function claim (desired: Json, previous: Json | undefined, uid: string, state: ClusterState): Json {
  const storage: string = desired.spec.resources.requests.storage
  const storageClassName: string | undefined = desired.spec.storageClassName ?? previous?.spec.storageClassName ?? state.defaultStorageClass
  return {
    annotations: {
      'pv.kubernetes.io/bind-completed': 'yes',
      'pv.kubernetes.io/bound-by-controller': 'yes',
      'volume.beta.kubernetes.io/storage-provisioner': PROVISIONER,
      'volume.kubernetes.io/selected-node': NODE,
      'volume.kubernetes.io/storage-provisioner': PROVISIONER
    },
    finalizers: ['kubernetes.io/pvc-protection'],
    spec: {
      ...desired.spec,
      ...(storageClassName === undefined ? {} : { storageClassName }),
      volumeMode: 'Filesystem',
      volumeName: previous?.spec.volumeName ?? `pvc-${uid}`
    },
    status: { accessModes: desired.spec.accessModes, capacity: { storage }, phase: 'Bound' }
  }
}

function groupOf (object: KubernetesObject): string {
  return `${object.kind}.${object.apiVersion}`
}

/** What the cluster holds after Metacontroller applied `desired` over `previous`, as Metacontroller sends it. */
export function appliedChildren (parent: KubernetesObject, desired: readonly KubernetesObject[], previous: ObjectMap, state: ClusterState): ObjectMap {
  const children: ObjectMap = Object.fromEntries(GROUPS.map((group) => [group, {}]))
  const parentUid = String(parent.metadata.uid)
  let resourceVersion = state.resourceVersion
  for (const object of desired as readonly Json[]) {
    const namespace: string = object.metadata.namespace ?? parent.metadata.namespace
    const key = `${namespace}/${object.metadata.name}`
    const old = previous[groupOf(object as KubernetesObject)]?.[key] as Json | undefined
    const applied = { ...object, metadata: { ...object.metadata, namespace, labels: { ...object.metadata.labels, 'controller-uid': parentUid } } }
    const lastApplied = JSON.stringify(sortedKeys(applied))
    const unchanged = old?.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration'] === lastApplied
    const uid = old?.metadata.uid ?? uidFor(`${object.kind}/${key}`)
    const creationTimestamp = old?.metadata.creationTimestamp ?? state.time
    const changedAt = unchanged ? old?.metadata.managedFields?.[0]?.time ?? state.time : state.time
    const hasGeneration = object.kind === 'Deployment' || object.kind === 'StatefulSet'
    const generation = !hasGeneration ? undefined : old === undefined ? 1 : old.metadata.generation + (unchanged ? 0 : 1)
    const server = object.kind === 'Deployment'
      ? deployment(applied, old, generation ?? 1, state)
      : object.kind === 'StatefulSet'
        ? statefulSet(applied, generation ?? 1, state)
        : object.kind === 'Service' ? service(applied, old) : claim(applied, old, uid, state)
    const metadata: Json = {
      ...applied.metadata,
      annotations: { ...applied.metadata.annotations, ...server.annotations, 'metacontroller.k8s.io/last-applied-configuration': lastApplied },
      creationTimestamp,
      ...(server.finalizers === undefined ? {} : { finalizers: server.finalizers }),
      ...(generation === undefined ? {} : { generation }),
      ownerReferences: [{ apiVersion: parent.apiVersion, blockOwnerDeletion: true, controller: true, kind: parent.kind, name: parent.metadata.name, uid: parentUid }],
      resourceVersion: String(resourceVersion++),
      uid
    }
    const managedFields = [managedEntry(object.apiVersion, 'metacontroller', changedAt, fieldsOf({ metadata: { annotations: { 'metacontroller.k8s.io/last-applied-configuration': lastApplied }, labels: applied.metadata.labels, ownerReferences: metadata.ownerReferences }, spec: object.spec }))]
    if (server.annotations !== undefined) {
      const volumeName = object.kind === 'PersistentVolumeClaim' ? { spec: { volumeName: server.spec.volumeName } } : {}
      managedFields.push(managedEntry(object.apiVersion, 'kube-controller-manager', state.time, fieldsOf({ metadata: { annotations: server.annotations }, ...volumeName })))
    }
    if (object.kind !== 'Service') managedFields.push(managedEntry(object.apiVersion, 'kube-controller-manager', state.time, fieldsOf({ status: server.status }), 'status'))
    metadata.managedFields = managedFields
    children[groupOf(object as KubernetesObject)]![key] = sortedKeys({ ...applied, metadata, spec: server.spec, status: server.status }) as KubernetesObject
  }
  return children
}
