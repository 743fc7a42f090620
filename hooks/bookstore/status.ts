import type { Deployment, StatefulSet } from 'kubernetes-types/apps/v1.js'
import { parentStatus, type ConditionInput, type KubernetesObject, type ParentOf, type Readiness } from '../framework/index.js'
import type { KeptSize, VolumePlan } from './claims.js'
import type { ChildNames } from './desired-children.js'
import type { bookStoreResource, BookStoreSpec, BookStoreStatus } from './resource.js'

/** The status of a BookStore, from its spec and its observed Deployment and StatefulSet. */

export interface ObservedWorkloads {
  deployment: (KubernetesObject & Deployment) | undefined
  statefulSet: (KubernetesObject & StatefulSet) | undefined
}

/** `status.readyReplicas` of an observed workload; a missing child or status counts as none ready. */
function readyReplicas (workload: ObservedWorkloads[keyof ObservedWorkloads]): number {
  const value: unknown = workload?.status?.readyReplicas
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0
}

interface Component {
  label: string
  child: string
  replicas: number
  readyReplicas: number
}

function readiness (app: Component, db: Component): Readiness {
  const counts = (component: Component): string => `${component.label} ${component.readyReplicas}/${component.replicas} (${component.child})`
  const waiting = [app, db].filter((component) => component.readyReplicas < component.replicas)
  if (waiting.length === 0) return { ready: true, reason: 'ReplicasReady', message: `all replicas ready: ${[app, db].map(counts).join(', ')}` }
  const reason = waiting.length === 2 ? 'ReplicasNotReady' : waiting[0] === app ? 'AppNotReady' : 'DatabaseNotReady'
  return { ready: false, reason, message: `replicas not ready yet: ${waiting.map(counts).join(', ')}` }
}

/** Conditions that say why some claims do not request dbSize; present only while that is so. */
function volumeConditions (spec: BookStoreSpec, volumes: VolumePlan): ConditionInput[] {
  const kept = (claims: KeptSize[]): string => claims.map((claim) => `${claim.name} stays at ${claim.requested}`).join(', ')
  const dbSize = `spec.bookDB.dbSize ${spec.bookDB.dbSize}`
  const conditions: ConditionInput[] = []
  if (volumes.refusedShrinks.length > 0) {
    conditions.push({
      type: 'VolumeShrinkRefused',
      status: 'True',
      reason: 'DbSizeBelowClaimSize',
      message: `${dbSize} is smaller than what claims already request, and volumes never shrink: ${kept(volumes.refusedShrinks)}`
    })
  }
  if (volumes.pendingResizes.length > 0) {
    conditions.push({
      type: 'VolumeResizePending',
      status: 'True',
      reason: 'ClaimNotBound',
      message: `${dbSize} waits for claims to be bound, as Kubernetes resizes only bound claims: ${kept(volumes.pendingResizes)} for now`
    })
  }
  if (volumes.unreadableSizes.length > 0) {
    const unreadable = volumes.unreadableSizes.map((claim) => `${claim.name} requests ${claim.requested}`).join(', ')
    conditions.push({
      type: 'VolumeSizeUnknown',
      status: 'True',
      reason: 'ClaimSizeNotAQuantity',
      message: `claims whose spec.resources.requests.storage is not a quantity, which no API server stores, are asked for ${dbSize}; Kubernetes refuses to make a bound claim smaller, so none shrinks: ${unreadable}`
    })
  }
  return conditions
}

export function bookStoreStatus (
  parent: ParentOf<typeof bookStoreResource>,
  now: string,
  spec: BookStoreSpec,
  names: ChildNames,
  volumes: VolumePlan,
  workloads: ObservedWorkloads
): BookStoreStatus {
  const app: Component = { label: 'app', child: `Deployment ${names.app}`, replicas: spec.bookApp.replicas, readyReplicas: readyReplicas(workloads.deployment) }
  const db: Component = { label: 'database', child: `StatefulSet ${names.db}`, replicas: spec.bookDB.replicas, readyReplicas: readyReplicas(workloads.statefulSet) }
  return parentStatus(parent, now, {
    app: { replicas: app.replicas, readyReplicas: app.readyReplicas },
    db: { replicas: db.replicas, readyReplicas: db.readyReplicas, volumeSize: volumes.volumeSize }
  }, readiness(app, db), volumeConditions(spec, volumes))
}
