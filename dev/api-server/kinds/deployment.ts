import { digest, goJson } from '../encoding.js'
import { fieldSet, fieldsOf, managedEntry } from '../managed-fields.js'
import type { ChildContext, Json, KindModel } from './model.js'
import { withTemplateDefaults } from './pod-template.js'

/** A Deployment as kube-controller-manager's Deployment controller keeps it: revision annotation, rollout status. */

const REVISION = 'deployment.kubernetes.io/revision'

/** The pod-template-hash of the ReplicaSet that a template gets. */
export function templateHash (template: unknown): string {
  return digest(goJson(template)).slice(0, 10)
}

function lastAppliedTemplate (object: Json | undefined): unknown {
  const lastApplied = object?.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration']
  return lastApplied === undefined ? undefined : JSON.parse(lastApplied).spec?.template
}

function revision (context: ChildContext): number {
  const { previous, applied } = context
  if (previous === undefined) return 1
  const changed = goJson(lastAppliedTemplate(previous)) !== goJson(applied.spec.template)
  return Number(previous.metadata.annotations?.[REVISION] ?? 0) + (changed ? 1 : 0)
}

export const deployment: KindModel = {
  hasGeneration: true,
  defaulted: (spec) => ({
    replicas: 1,
    ...spec,
    template: withTemplateDefaults(spec.template),
    strategy: spec.strategy ?? { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
    revisionHistoryLimit: spec.revisionHistoryLimit ?? 10,
    progressDeadlineSeconds: spec.progressDeadlineSeconds ?? 600
  }),
  completed: (spec) => spec,
  status: (spec, { name, applied, generation, createdAt, state }) => {
    const replicas: number = spec.replicas
    const readyReplicas = state.readyReplicas ?? replicas
    const updatedReplicas = state.updatedReplicas ?? replicas
    const available = readyReplicas >= replicas
    const complete = available && updatedReplicas >= replicas
    const replicaSet = `${name}-${templateHash(applied.spec.template)}`
    const times = (since: string): Json => ({ lastUpdateTime: state.time, lastTransitionTime: since })
    return {
      observedGeneration: state.observedGeneration ?? generation,
      ...(replicas === 0 ? {} : { replicas: Math.max(replicas, updatedReplicas) }),
      ...(updatedReplicas === 0 ? {} : { updatedReplicas }),
      ...(readyReplicas === 0 ? {} : { readyReplicas, availableReplicas: readyReplicas }),
      ...(replicas > readyReplicas ? { unavailableReplicas: replicas - readyReplicas } : {}),
      conditions: [
        available
          ? { type: 'Available', status: 'True', ...times(createdAt), reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' }
          : { type: 'Available', status: 'False', ...times(state.time), reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' },
        complete
          ? { type: 'Progressing', status: 'True', ...times(createdAt), reason: 'NewReplicaSetAvailable', message: `ReplicaSet "${replicaSet}" has successfully progressed.` }
          : { type: 'Progressing', status: 'True', ...times(createdAt), reason: 'ReplicaSetUpdated', message: `ReplicaSet "${replicaSet}" is progressing.` }
      ]
    }
  },
  annotations: (_spec, context) => ({ [REVISION]: String(revision(context)) }),
  deletion: { gracePeriodSeconds: 0, finalizers: ['foregroundDeletion'] },
  managedFields: (object, { state }) => [
    managedEntry('apps/v1', 'kube-controller-manager', state.time, { 'f:metadata': { 'f:annotations': fieldSet([REVISION]) } }),
    managedEntry('apps/v1', 'kube-controller-manager', state.time, { 'f:status': fieldsOf(object.status) }, 'status')
  ]
}
