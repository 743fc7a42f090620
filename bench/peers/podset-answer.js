/**
 * The PodSet answer as a person would write it by hand for a hook server of their own: the peers' core. It gives
 * the same answer as hooks/podset/sync.ts for every request the benchmark sends (bench/run.ts checks that), with
 * no schema, no spec validation and no shared code.
 */

const TERMINAL = new Set(['Succeeded', 'Failed'])
const COUNTED = new Set(['Running', 'Pending'])

function readyCondition (observed, status, reason, message, generation, now) {
  const previous = (Array.isArray(observed?.conditions) ? observed.conditions : []).find((c) => c?.type === 'Ready')
  return {
    type: 'Ready',
    status,
    reason,
    message,
    lastTransitionTime: previous?.status === status && typeof previous.lastTransitionTime === 'string' ? previous.lastTransitionTime : now,
    ...(generation === undefined ? {} : { observedGeneration: generation })
  }
}

export function podSetAnswer (request) {
  const { parent } = request
  const { name, namespace, generation } = parent.metadata
  const replicas = parent.spec?.replicas ?? 1
  const image = parent.spec?.image ?? 'busybox'
  const command = parent.spec?.command ?? ['sleep', '3600']
  const observed = new Map(Object.values(request.children['Pod.v1'] ?? {}).map((pod) => [pod.metadata.name, pod]))

  const children = []
  const available = []
  const missing = []
  for (let ordinal = 0; ordinal < replicas; ordinal++) {
    const podName = `${name}-pod-${ordinal}`
    const current = observed.get(podName)
    if (current === undefined || !TERMINAL.has(current.status?.phase)) {
      children.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: podName,
          ...(namespace === undefined ? {} : { namespace }),
          labels: {
            app: name,
            version: 'v0.1',
            'app.kubernetes.io/name': 'podset',
            'app.kubernetes.io/instance': name,
            'app.kubernetes.io/component': 'pod',
            'app.kubernetes.io/managed-by': 'metacontroller-hooks'
          }
        },
        spec: { containers: [{ name: 'busybox', image, command: [...command] }] }
      })
    }
    if (current !== undefined && current.metadata.deletionTimestamp === undefined && COUNTED.has(current.status?.phase)) available.push(podName)
    else missing.push(podName)
  }

  const counts = `${available.length}/${replicas} pods are running or pending`
  const listed = missing.slice(0, 5).join(', ') + (missing.length > 5 ? ` and ${missing.length - 5} more` : '')
  const [ready, reason, message] = parent.metadata.deletionTimestamp !== undefined
    ? ['False', 'Deleting', `the PodSet is being deleted, and its pods with it; ${counts}`]
    : missing.length === 0 ? ['True', 'PodsAvailable', counts] : ['False', 'PodsUnavailable', `${counts}; waiting for ${listed}`]
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
  return {
    status: {
      readyReplicas: available.length,
      podNames: available,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
      conditions: [readyCondition(parent.status, ready, reason, message, generation, now)]
    },
    children
  }
}
