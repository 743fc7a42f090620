import { condition, observedConditions, readyCondition, type ConditionInput } from '../wire/conditions.js'
import type { Condition, KubernetesObject } from '../wire/schemas.js'
import type { KeptSize, VolumePlan } from './claims.js'
import type { ChildNames } from './desired-children.js'
import type { BookStoreSpec, BookStoreStatus } from './resource.js'

/** The status of a BookStore, from its spec and its observed Deployment and StatefulSet. */

export interface ObservedWorkloads {
  deployment: KubernetesObject | undefined
  statefulSet: KubernetesObject | undefined
}

/** `status.readyReplicas` of an observed workload; a missing child or status counts as none ready. */
function readyReplicas (workload: KubernetesObject | undefined): number {
  const value = (workload?.status as { readyReplicas?: unknown } | undefined)?.readyReplicas
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0
}

interface Component {
  label: string
  child: string
  replicas: number
  readyReplicas: number
}

function readiness (app: Component, db: Component): { ready: boolean, reason: string, message: string } {
  const counts = (component: Component): string => `${component.label} ${component.readyReplicas}/${component.replicas} (${component.child})`
  const waiting = [app, db].filter((component) => component.readyReplicas < component.replicas)
  if (waiting.length === 0) return { ready: true, reason: 'ReplicasReady', message: `all replicas ready: ${[app, db].map(counts).join(', ')}` }
  const reason = waiting.length === 2 ? 'ReplicasNotReady' : waiting[0] === app ? 'AppNotReady' : 'DatabaseNotReady'
  return { ready: false, reason, message: `replicas not ready yet: ${waiting.map(counts).join(', ')}` }
}

/** Conditions that say why some claims do not request dbSize; present only while that is so. */
function volumeConditions (spec: BookStoreSpec, volumes: VolumePlan, observed: readonly Condition[], generation: number | undefined, now: string): Condition[] {
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
  return conditions.map((input) => condition(input, observed, generation, now))
}

export function bookStoreStatus (
  parent: KubernetesObject,
  spec: BookStoreSpec,
  names: ChildNames,
  volumes: VolumePlan,
  workloads: ObservedWorkloads,
  now: string
): BookStoreStatus {
  const generation = parent.metadata.generation
  const observed = observedConditions(parent.status)
  const app: Component = { label: 'app', child: `Deployment ${names.app}`, replicas: spec.bookApp.replicas, readyReplicas: readyReplicas(workloads.deployment) }
  const db: Component = { label: 'database', child: `StatefulSet ${names.db}`, replicas: spec.bookDB.replicas, readyReplicas: readyReplicas(workloads.statefulSet) }
  const { ready, reason, message } = readiness(app, db)
  return {
    app: { replicas: app.replicas, readyReplicas: app.readyReplicas },
    db: { replicas: db.replicas, readyReplicas: db.readyReplicas, volumeSize: volumes.volumeSize },
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: [
      readyCondition(ready, reason, message, observed, generation, now),
      ...volumeConditions(spec, volumes, observed, generation, now)
    ]
  }
}
