import type { CompositeController } from '../framework/index.js'
import { podSetResource } from './resource.js'
import { podSetAnswerBytes, syncPodSet } from './sync.js'

/** PodSet: `replicas` identical pods named by ordinal, as the kubebuilder tutorial's operator kept them. */
export const podSet: CompositeController<typeof podSetResource> = {
  type: 'composite',
  name: 'podset',
  resource: podSetResource,
  needs: [],
  childResources: [
    // A pod's command (like most of its spec) cannot change once it exists, so InPlace would fail on every sync
    // after a spec change; Recreate deletes each pod whose applied spec differs, and the next sync creates it anew.
    // The hook reads a pod's name, deletionTimestamp and phase: its spec is left out of the requests it gets.
    { apiVersion: 'v1', kind: 'Pod', resource: 'pods', updateStrategy: 'Recreate', observedFields: ['status'] }
  ],
  hooks: { sync: syncPodSet },
  answerBytes: podSetAnswerBytes
}
