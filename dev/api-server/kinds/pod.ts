import { addSeconds, digest } from '../encoding.js'
import { fieldsOf, managedEntry } from '../managed-fields.js'
import type { ChildContext, Json, KindModel, PodPhase } from './model.js'
import { withPodSpecDefaults } from './pod-template.js'

/** A Pod as a cluster with one node runs it: admission's service-account token and tolerations, the kubelet's status. */

const NODE = { name: 'kind-worker', ip: '172.18.0.3' }

/** How containerd reports an image reference: registry, repository and tag spelled out. */
function normalizedImage (image: string): string {
  const slash = image.indexOf('/')
  const first = slash === -1 ? '' : image.slice(0, slash)
  const qualified = slash === -1
    ? `docker.io/library/${image}`
    : /[.:]/.test(first) || first === 'localhost' ? image : `docker.io/${image}`
  const lastPart = qualified.slice(qualified.lastIndexOf('/') + 1)
  return lastPart.includes(':') || lastPart.includes('@') ? qualified : `${qualified}:latest`
}

function ordinalOf (name: string): number {
  return Number(/(\d+)$/.exec(name)?.[1] ?? 0)
}

function podIp (name: string): string {
  const ordinal = ordinalOf(name)
  return `10.244.${1 + Math.floor(ordinal / 250)}.${2 + ordinal % 250}`
}

function tokenVolumeName (name: string): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789'
  const bytes = Buffer.from(digest(`token:${name}`), 'hex')
  return `kube-api-access-${[...bytes.subarray(0, 5)].map((byte) => alphabet[byte % alphabet.length]).join('')}`
}

function podCondition (type: string, status: 'True' | 'False', time: string, extra: Record<string, string> = {}): Json {
  return { type, status, lastProbeTime: null, lastTransitionTime: time, ...extra }
}

function kubeletStatus (name: string, container: { name: string, image: string }, phase: PodPhase, createdAt: string): Json {
  const started = addSeconds(createdAt, 3)
  const image = normalizedImage(container.image)
  const imageID = `${image.replace(/:[^:/]+$/, '')}@sha256:${digest(`image:${image}`)}`
  const containerID = `containerd://${digest(`container:${name}`)}`
  const host = { hostIP: NODE.ip, hostIPs: [{ ip: NODE.ip }] }
  const scheduled = podCondition('PodScheduled', 'True', createdAt)
  const initialized = podCondition('Initialized', 'True', createdAt)
  if (phase === 'Pending') {
    const unready = { reason: 'ContainersNotReady', message: `containers with unready status: [${container.name}]` }
    return {
      conditions: [podCondition('PodReadyToStartContainers', 'False', createdAt), initialized, podCondition('Ready', 'False', createdAt, unready), podCondition('ContainersReady', 'False', createdAt, unready), scheduled],
      containerStatuses: [{ image: container.image, imageID: '', lastState: {}, name: container.name, ready: false, restartCount: 0, started: false, state: { waiting: { reason: 'ContainerCreating' } } }],
      ...host,
      phase,
      qosClass: 'BestEffort',
      startTime: createdAt
    }
  }
  const network = { podIP: podIp(name), podIPs: [{ ip: podIp(name) }] }
  if (phase === 'Running') {
    return {
      conditions: [podCondition('PodReadyToStartContainers', 'True', started), initialized, podCondition('Ready', 'True', started), podCondition('ContainersReady', 'True', started), scheduled],
      containerStatuses: [{ containerID, image, imageID, lastState: {}, name: container.name, ready: true, restartCount: 0, started: true, state: { running: { startedAt: started } } }],
      ...host,
      phase,
      ...network,
      qosClass: 'BestEffort',
      startTime: createdAt
    }
  }
  const ended = addSeconds(createdAt, 1800)
  const unready = { reason: 'PodFailed', message: '' }
  const terminated = phase === 'Succeeded'
    ? { containerID, exitCode: 0, finishedAt: ended, reason: 'Completed', startedAt: started }
    : { containerID, exitCode: 137, finishedAt: ended, reason: 'Error', startedAt: started }
  const eviction = 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 86412Ki. '
  return {
    conditions: [
      ...(phase === 'Failed' ? [podCondition('DisruptionTarget', 'True', ended, { reason: 'TerminationByKubelet', message: eviction })] : []),
      podCondition('PodReadyToStartContainers', 'False', ended), initialized,
      podCondition('Ready', 'False', ended, unready), podCondition('ContainersReady', 'False', ended, unready), scheduled
    ],
    containerStatuses: [{ containerID, image, imageID, lastState: {}, name: container.name, ready: false, restartCount: 0, started: false, state: { terminated } }],
    ...host,
    ...(phase === 'Failed' ? { message: eviction, reason: 'Evicted' } : {}),
    phase,
    ...network,
    qosClass: 'BestEffort',
    startTime: createdAt
  }
}

const phaseOf = (context: ChildContext): PodPhase => context.state.phase ?? 'Running'

export const pod: KindModel = {
  hasGeneration: false,
  defaulted: (spec) => ({ ...withPodSpecDefaults(spec), enableServiceLinks: spec.enableServiceLinks ?? true }),
  completed: (spec, { name }) => {
    const token = tokenVolumeName(name)
    const admitted: Json = {
      ...spec,
      containers: spec.containers.map((container: Json) => ({
        ...container,
        volumeMounts: [...container.volumeMounts ?? [], { mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', name: token, readOnly: true }]
      })),
      nodeName: NODE.name,
      preemptionPolicy: 'PreemptLowerPriority',
      priority: 0,
      serviceAccount: 'default',
      serviceAccountName: 'default',
      tolerations: [
        { effect: 'NoExecute', key: 'node.kubernetes.io/not-ready', operator: 'Exists', tolerationSeconds: 300 },
        { effect: 'NoExecute', key: 'node.kubernetes.io/unreachable', operator: 'Exists', tolerationSeconds: 300 }
      ],
      volumes: [...spec.volumes ?? [], {
        name: token,
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { items: [{ key: 'ca.crt', path: 'ca.crt' }], name: 'kube-root-ca.crt' } },
            { downwardAPI: { items: [{ fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' }, path: 'namespace' }] } }
          ]
        }
      }]
    }
    return Object.fromEntries(Object.entries(admitted).sort(([a], [b]) => a < b ? -1 : 1))
  },
  status: (spec, context) => {
    const [first] = spec.containers
    if (first === undefined) throw new Error(`${context.name} has no container`)
    return kubeletStatus(context.name, first, phaseOf(context), context.createdAt)
  },
  deletion: { gracePeriodSeconds: 30, finalizers: [] },
  managedFields: (object, context) => {
    // qosClass is the API server's, not the kubelet's.
    const { qosClass: _, ...reported } = object.status
    const time = phaseOf(context) === 'Running' ? addSeconds(context.createdAt, 3) : context.createdAt
    return [managedEntry('v1', 'kubelet', time, { 'f:status': fieldsOf(reported) }, 'status')]
  }
}
