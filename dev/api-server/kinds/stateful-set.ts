import { fieldsOf, managedEntry } from '../managed-fields.js'
import { templateHash } from './deployment.js'
import type { KindModel } from './model.js'
import { withTemplateDefaults } from './pod-template.js'

/** A StatefulSet as kube-controller-manager's StatefulSet controller keeps it. */

export const statefulSet: KindModel = {
  hasGeneration: true,
  defaulted: (spec) => ({
    ...spec,
    persistentVolumeClaimRetentionPolicy: spec.persistentVolumeClaimRetentionPolicy ?? { whenDeleted: 'Retain', whenScaled: 'Retain' },
    podManagementPolicy: spec.podManagementPolicy ?? 'OrderedReady',
    revisionHistoryLimit: spec.revisionHistoryLimit ?? 10,
    template: withTemplateDefaults(spec.template),
    updateStrategy: spec.updateStrategy ?? { rollingUpdate: { partition: 0 }, type: 'RollingUpdate' }
  }),
  completed: (spec) => spec,
  status: (spec, { name, applied, generation, state }) => {
    const replicas: number = spec.replicas
    const ready = state.readyReplicas ?? replicas
    const revision = `${name}-${templateHash(applied.spec.template)}`
    return {
      availableReplicas: ready,
      collisionCount: 0,
      ...(replicas > 0 ? { currentReplicas: replicas } : {}),
      currentRevision: revision,
      observedGeneration: state.observedGeneration ?? generation,
      ...(ready > 0 ? { readyReplicas: ready } : {}),
      replicas,
      updateRevision: revision,
      ...(replicas > 0 ? { updatedReplicas: replicas } : {})
    }
  },
  deletion: { gracePeriodSeconds: 0, finalizers: ['foregroundDeletion'] },
  managedFields: (object, { state }) => [managedEntry('apps/v1', 'kube-controller-manager', state.time, { 'f:status': fieldsOf(object.status) }, 'status')]
}
