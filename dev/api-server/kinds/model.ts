/** What every kind's model provides to the simulation in ../apply.ts. */

export type Json = Record<string, any>

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed'

/** The cluster around one apply of one child. */
export interface ApplyState {
  /** When the apply happened: the time of the writes it causes, and the creation time of a new object. */
  time: string
  resourceVersion: number | string
  /** Default: the previous object's, else one derived from kind, namespace and name. */
  uid?: string
  /** Default: the previous object's, else `time`. */
  createdAt?: string
  /** Set when the object is being deleted. */
  deletionTimestamp?: string
  /** Workloads; default: every replica. */
  readyReplicas?: number
  /** Deployment; default: every replica. */
  updatedReplicas?: number
  /** Workloads; default: the object's generation. */
  observedGeneration?: number
  /** Pod; default Running. `Failed` looks like an eviction, `Succeeded` like a command that exited 0. */
  phase?: PodPhase
  /** PersistentVolumeClaim: the class the DefaultStorageClass admission gives a claim that names none. */
  defaultStorageClass?: string
}

export interface ChildContext {
  name: string
  /** The desired child as Metacontroller sends it to the API server: namespace and controller-uid label added. */
  applied: Json
  previous: Json | undefined
  uid: string
  createdAt: string
  generation: number | undefined
  state: ApplyState
}

export interface KindModel {
  hasGeneration: boolean
  /** The spec with the defaults that its creator owns (they appear in the creator's managedFields). */
  defaulted: (spec: Json, context: ChildContext) => Json
  /** The spec once admission, allocators and controllers have added theirs. */
  completed: (spec: Json, context: ChildContext) => Json
  /** None for a kind without a status (a ConfigMap). */
  status?: (spec: Json, context: ChildContext) => Json
  /** Annotations and finalizers that others add. */
  annotations?: (spec: Json, context: ChildContext) => Record<string, string>
  finalizers?: string[]
  /** How a deletion in progress shows in the metadata. */
  deletion: { gracePeriodSeconds: number, finalizers: string[] }
  /** The writes of others (controllers, the kubelet), as managedFields entries after the creator's. */
  managedFields: (object: Json, context: ChildContext) => Json[]
}
