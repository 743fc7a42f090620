import { fieldSet, fieldsOf, managedEntry } from '../managed-fields.js'
import type { KindModel } from './model.js'

/** A claim that the DefaultStorageClass admission, a CSI provisioner and the volume binder have dealt with: bound. */

const PROVISIONER = 'hostpath.csi.k8s.io'
const NODE = 'worker-1'
const BINDING = {
  'pv.kubernetes.io/bind-completed': 'yes',
  'pv.kubernetes.io/bound-by-controller': 'yes',
  'volume.beta.kubernetes.io/storage-provisioner': PROVISIONER,
  'volume.kubernetes.io/selected-node': NODE,
  'volume.kubernetes.io/storage-provisioner': PROVISIONER
}

export const persistentVolumeClaim: KindModel = {
  hasGeneration: false,
  defaulted: (spec) => ({ ...spec, volumeMode: spec.volumeMode ?? 'Filesystem' }),
  completed: (spec, { uid, previous, state }) => {
    const storageClassName: string | undefined = spec.storageClassName ?? previous?.spec.storageClassName ?? state.defaultStorageClass
    return { ...spec, ...(storageClassName === undefined ? {} : { storageClassName }), volumeName: previous?.spec.volumeName ?? `pvc-${uid}` }
  },
  status: (spec) => ({ accessModes: spec.accessModes, capacity: { storage: spec.resources.requests.storage }, phase: 'Bound' }),
  annotations: () => BINDING,
  finalizers: ['kubernetes.io/pvc-protection'],
  deletion: { gracePeriodSeconds: 0, finalizers: ['foregroundDeletion'] },
  managedFields: (object, { state }) => [
    managedEntry('v1', 'kube-controller-manager', state.time, { 'f:metadata': { 'f:annotations': fieldSet(Object.keys(BINDING)) }, 'f:spec': { 'f:volumeName': {} } }),
    managedEntry('v1', 'kube-controller-manager', state.time, { 'f:status': fieldsOf(object.status) }, 'status')
  ]
}
