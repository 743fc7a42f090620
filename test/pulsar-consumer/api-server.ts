import type { KubernetesObject } from '../../hooks/wire/schemas.js'

/**
 * What the API server returns for a Deployment that Metacontroller applied from a hook's answer: the
 * `controller-uid` label, the last-applied annotation, system metadata, the owner reference, managedFields,
 * every server default, and a status. Used to build observed children for the fixtures and the no-churn tests.
 */

export interface Parent {
  name: string
  uid: string
}

export interface Rollout {
  uid: string
  resourceVersion: string
  generation: number
  creationTimestamp: string
  /** When the spec was last written (managedFields), and when the status last changed. */
  updatedAt: string
  revision: number
  replicas: number
  readyReplicas: number
  updatedReplicas: number
  /** status.observedGeneration; defaults to `generation`. */
  observedGeneration?: number
  deletionTimestamp?: string
}

type Json = Record<string, any>

function sortedKeys (map: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
}

/** Go's encoding/json writes map keys sorted, as the last-applied annotation shows. */
function canonicalJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Json)[key])}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** The API server's imagePullPolicy default: Always for an untagged or `:latest` image. */
function pullsAlways (image: string): boolean {
  const tag = image.split('/').pop()?.split(':')[1]
  return tag === undefined || tag === 'latest'
}

function withServerDefaults (desired: Json): Json {
  const spec = desired.spec
  const pod = spec.template.spec
  return {
    replicas: spec.replicas,
    selector: spec.selector,
    template: {
      metadata: { creationTimestamp: null, labels: spec.template.metadata.labels },
      spec: {
        containers: pod.containers.map((container: Json) => ({
          ...container,
          resources: {},
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: pullsAlways(String(container.image)) ? 'Always' : 'IfNotPresent'
        })),
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 30,
        dnsPolicy: 'ClusterFirst',
        securityContext: {},
        schedulerName: 'default-scheduler'
      }
    },
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
    revisionHistoryLimit: 10,
    progressDeadlineSeconds: 600
  }
}

function deploymentStatus (name: string, rollout: Rollout): Json {
  const { replicas, readyReplicas, updatedReplicas, updatedAt, creationTimestamp } = rollout
  const available = readyReplicas >= replicas
  const complete = available && updatedReplicas >= replicas
  const replicaSet = `${name}-${['7d9c5b8f6d', '5f6b9c7d48', '6c8d7f5b9a', '84b6d9c7f5'][(rollout.revision - 1) % 4]}`
  return {
    observedGeneration: rollout.observedGeneration ?? rollout.generation,
    ...(replicas === 0 ? {} : { replicas: Math.max(replicas, updatedReplicas) }),
    ...(updatedReplicas === 0 ? {} : { updatedReplicas }),
    ...(readyReplicas === 0 ? {} : { readyReplicas, availableReplicas: readyReplicas }),
    ...(replicas - readyReplicas > 0 ? { unavailableReplicas: replicas - readyReplicas } : {}),
    conditions: [
      available
        ? { type: 'Available', status: 'True', lastUpdateTime: updatedAt, lastTransitionTime: creationTimestamp, reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' }
        : { type: 'Available', status: 'False', lastUpdateTime: updatedAt, lastTransitionTime: updatedAt, reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' },
      complete
        ? { type: 'Progressing', status: 'True', lastUpdateTime: updatedAt, lastTransitionTime: creationTimestamp, reason: 'NewReplicaSetAvailable', message: `ReplicaSet "${replicaSet}" has successfully progressed.` }
        : { type: 'Progressing', status: 'True', lastUpdateTime: updatedAt, lastTransitionTime: creationTimestamp, reason: 'ReplicaSetUpdated', message: `ReplicaSet "${replicaSet}" is progressing.` }
    ]
  }
}

function managedFields (desired: Json, rollout: Rollout): Json[] {
  const labels = Object.fromEntries(['.', ...Object.keys(desired.metadata.labels)].map((key) => [key === '.' ? '.' : `f:${key}`, {}]))
  const templateLabels = Object.fromEntries(['.', ...Object.keys(desired.spec.template.metadata.labels)].map((key) => [key === '.' ? '.' : `f:${key}`, {}]))
  const envNames = desired.spec.template.spec.containers[0].env.map((env: Json) => env.name) as string[]
  const manager = (fieldsV1: Json, extra: Json = {}, manager = 'metacontroller'): Json => ({ manager, operation: 'Update', apiVersion: 'apps/v1', time: rollout.updatedAt, fieldsType: 'FieldsV1', fieldsV1, ...extra })
  return [
    manager({
      'f:metadata': {
        'f:annotations': { '.': {}, 'f:metacontroller.k8s.io/last-applied-configuration': {} },
        'f:labels': labels,
        'f:ownerReferences': { '.': {}, [`k:{"uid":"${desired.metadata.ownerReferences[0].uid}"}`]: {} }
      },
      'f:spec': {
        'f:progressDeadlineSeconds': {},
        'f:replicas': {},
        'f:revisionHistoryLimit': {},
        'f:selector': {},
        'f:strategy': { 'f:rollingUpdate': { '.': {}, 'f:maxSurge': {}, 'f:maxUnavailable': {} }, 'f:type': {} },
        'f:template': {
          'f:metadata': { 'f:labels': templateLabels },
          'f:spec': {
            'f:containers': {
              'k:{"name":"pulsarconsumer"}': {
                '.': {},
                'f:env': {
                  '.': {},
                  ...Object.fromEntries(envNames.map((name) => [`k:{"name":"${name}"}`, { '.': {}, 'f:name': {}, 'f:value': {} }]))
                },
                'f:image': {},
                'f:imagePullPolicy': {},
                'f:name': {},
                'f:resources': {},
                'f:terminationMessagePath': {},
                'f:terminationMessagePolicy': {}
              }
            },
            'f:dnsPolicy': {},
            'f:restartPolicy': {},
            'f:schedulerName': {},
            'f:securityContext': {},
            'f:terminationGracePeriodSeconds': {}
          }
        }
      }
    }),
    manager({ 'f:metadata': { 'f:annotations': { 'f:deployment.kubernetes.io/revision': {} } } }, {}, 'kube-controller-manager'),
    manager({
      'f:status': {
        'f:availableReplicas': {},
        'f:conditions': {
          '.': {},
          'k:{"type":"Available"}': { '.': {}, 'f:lastTransitionTime': {}, 'f:lastUpdateTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} },
          'k:{"type":"Progressing"}': { '.': {}, 'f:lastTransitionTime': {}, 'f:lastUpdateTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} }
        },
        'f:observedGeneration': {},
        'f:readyReplicas': {},
        'f:replicas': {},
        'f:updatedReplicas': {}
      }
    }, { subresource: 'status' }, 'kube-controller-manager')
  ]
}

/** The Deployment the API server holds after Metacontroller applied `desired` (a hook answer's child) for `parent`. */
export function asApplied (desired: KubernetesObject, parent: Parent, rollout: Rollout): KubernetesObject {
  const source = desired as Json
  // Metacontroller adds the selector label it generated before applying, so the last-applied annotation has it.
  const labels = sortedKeys({ ...source.metadata.labels, 'controller-uid': parent.uid })
  const applied = { ...source, metadata: { ...source.metadata, labels } }
  const ownerReferences = [{ apiVersion: 'pulsar.pulsarconsumer.krvarma.com/v1', kind: 'PulsarConsumer', name: parent.name, uid: parent.uid, controller: true, blockOwnerDeletion: true }]
  const metadata: Json = {
    name: source.metadata.name,
    namespace: source.metadata.namespace,
    uid: rollout.uid,
    resourceVersion: rollout.resourceVersion,
    generation: rollout.generation,
    creationTimestamp: rollout.creationTimestamp,
    ...(rollout.deletionTimestamp === undefined ? {} : { deletionTimestamp: rollout.deletionTimestamp, deletionGracePeriodSeconds: 0 }),
    labels,
    annotations: {
      'deployment.kubernetes.io/revision': String(rollout.revision),
      'metacontroller.k8s.io/last-applied-configuration': canonicalJson(applied)
    },
    ownerReferences,
    ...(rollout.deletionTimestamp === undefined ? {} : { finalizers: ['foregroundDeletion'] }),
    managedFields: managedFields({ ...applied, metadata: { ...applied.metadata, ownerReferences } }, rollout)
  }
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: withServerDefaults(source),
    status: deploymentStatus(String(source.metadata.name), rollout)
  }
}
