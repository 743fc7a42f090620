import { HookError } from '../errors.js'
import { specParser } from '../spec.js'
import { observedConditions, readyCondition } from '../wire/conditions.js'
import { observedByName } from '../wire/objects.js'
import type { CompositeRequest, CompositeResponse, KubernetesObject } from '../wire/schemas.js'
import { consumerDeployment, type ConsumerDeployment } from './consumer-deployment.js'
import { PulsarConsumerSpecSchema, pulsarConsumerResource, type PulsarConsumerStatus } from './resource.js'

/** The pure core of PulsarConsumer: the desired Deployment for a parent, and the status from the observed one. */

const parseSpec = specParser(PulsarConsumerSpecSchema, pulsarConsumerResource.kind)

interface Readiness {
  ready: boolean
  reason: string
  message: string
}

interface DeploymentStatusCounts {
  observedGeneration?: unknown
  updatedReplicas?: unknown
  readyReplicas?: unknown
}

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

function readiness (parent: KubernetesObject, desired: ConsumerDeployment, observed: KubernetesObject | undefined, replicas: number): Readiness {
  const name = desired.metadata.name
  if (parent.metadata.deletionTimestamp !== undefined) {
    return { ready: false, reason: 'Deleting', message: `${pulsarConsumerResource.kind} is being deleted; garbage collection removes Deployment ${name}` }
  }
  if (observed === undefined) {
    return { ready: false, reason: 'DeploymentCreating', message: `Deployment ${name} is being created` }
  }
  // The sync that changes the spec still sees the old Deployment, whose ready pods run the old spec.
  if (!includes(observed, desired)) {
    return { ready: false, reason: 'DeploymentUpdating', message: `Deployment ${name} is being updated` }
  }
  const status = (observed.status ?? {}) as DeploymentStatusCounts
  const updated = count(status.updatedReplicas)
  if (count(status.observedGeneration) < count(observed.metadata.generation) || updated < replicas) {
    return { ready: false, reason: 'RollingOut', message: `${Math.min(updated, replicas)}/${replicas} consumers run the current spec` }
  }
  const ready = count(status.readyReplicas)
  if (ready < replicas) {
    return { ready: false, reason: 'ConsumersNotReady', message: `${ready}/${replicas} consumers ready` }
  }
  return {
    ready: true,
    reason: 'ConsumersReady',
    message: replicas === 0 ? 'scaled to zero: no consumers requested' : `${replicas}/${replicas} consumers ready`
  }
}

export function syncPulsarConsumer (request: CompositeRequest, now: string): CompositeResponse {
  const { parent } = request
  if (typeof parent.metadata.name !== 'string' || parent.metadata.name === '') {
    throw new HookError(400, 'parent.metadata.name is missing: the Deployment is named after the PulsarConsumer')
  }
  const spec = parseSpec(parent.spec)
  const deployment = consumerDeployment(parent, spec)
  const observed = observedByName(request.children, deployment.kind, deployment.apiVersion).get(deployment.metadata.name)
  const generation = parent.metadata.generation
  const { ready, reason, message } = readiness(parent, deployment, observed, spec.replicas)
  const status: PulsarConsumerStatus = {
    server: spec.serverAddress,
    topic: spec.topic,
    subscription: spec.subscriptionName,
    replicas: spec.replicas,
    readyReplicas: count((observed?.status as DeploymentStatusCounts | undefined)?.readyReplicas),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: [readyCondition(ready, reason, message, observedConditions(parent.status), generation, now)]
  }
  return { status, children: [deployment] }
}
