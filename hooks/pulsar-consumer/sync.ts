import type { Deployment } from 'kubernetes-types/apps/v1.js'
import { observedByName, parentStatus, type CompositeRequest, type CompositeResponse, type HookContext, type KubernetesObject, type ParentMetadata, type Readiness } from '../framework/index.js'
import { consumerDeployment, type ConsumerDeployment } from './consumer-deployment.js'
import { pulsarConsumerResource, type PulsarConsumerStatus } from './resource.js'

/** The pure core of PulsarConsumer: the desired Deployment for a parent, and the status from the observed one. */

type ObservedDeployment = KubernetesObject & Deployment

function count (value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 0
}

/**
 * Whether every field of `desired` has its value in `observed`: extra fields (server defaults, status, metadata)
 * are ignored, and a desired list item may sit anywhere in the observed list.
 */
function includes (observed: unknown, desired: unknown): boolean {
  if (Array.isArray(desired)) {
    return Array.isArray(observed) && desired.every((item) => observed.some((candidate) => includes(candidate, item)))
  }
  if (typeof desired === 'object' && desired !== null) {
    if (typeof observed !== 'object' || observed === null || Array.isArray(observed)) return false
    const fields = observed as Record<string, unknown>
    return Object.entries(desired).every(([key, value]) => includes(fields[key], value))
  }
  return observed === desired
}

function readiness (parent: ParentMetadata, desired: ConsumerDeployment, observed: ObservedDeployment | undefined, replicas: number): Readiness {
  const name = desired.metadata.name
  if (parent.deleting) {
    return { ready: false, reason: 'Deleting', message: `${pulsarConsumerResource.kind} is being deleted; garbage collection removes Deployment ${name}` }
  }
  if (observed === undefined) {
    return { ready: false, reason: 'DeploymentCreating', message: `Deployment ${name} is being created` }
  }
  // The sync that changes the spec still sees the old Deployment, whose ready pods run the old spec.
  if (!includes(observed, desired)) {
    return { ready: false, reason: 'DeploymentUpdating', message: `Deployment ${name} is being updated` }
  }
  const updated = count(observed.status?.updatedReplicas)
  if (count(observed.status?.observedGeneration) < count(observed.metadata.generation) || updated < replicas) {
    return { ready: false, reason: 'RollingOut', message: `${Math.min(updated, replicas)}/${replicas} consumers run the current spec` }
  }
  const ready = count(observed.status?.readyReplicas)
  if (ready < replicas) {
    return { ready: false, reason: 'ConsumersNotReady', message: `${ready}/${replicas} consumers ready` }
  }
  return {
    ready: true,
    reason: 'ConsumersReady',
    message: replicas === 0 ? 'scaled to zero: no consumers requested' : `${replicas}/${replicas} consumers ready`
  }
}

export function syncPulsarConsumer (request: CompositeRequest, { parent, now }: HookContext<typeof pulsarConsumerResource>): CompositeResponse {
  const spec = parent.spec()
  const deployment = consumerDeployment(parent, spec)
  const observed = observedByName<Deployment>(request.children, deployment.kind, deployment.apiVersion).get(deployment.metadata.name)
  const status: PulsarConsumerStatus = parentStatus(parent, now, {
    server: spec.serverAddress,
    topic: spec.topic,
    subscription: spec.subscriptionName,
    replicas: spec.replicas,
    readyReplicas: count(observed?.status?.readyReplicas)
  }, readiness(parent, deployment, observed, spec.replicas))
  return { status, children: [deployment] }
}
