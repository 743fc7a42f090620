import { createHash } from 'node:crypto'
import type { Deployment } from 'kubernetes-types/apps/v1.js'
import type { ObjectMeta } from 'kubernetes-types/meta/v1.js'
import type { ParentMetadata } from '../framework/index.js'
import type { PulsarConsumerSpec } from './resource.js'

export type ConsumerDeployment = Deployment & {
  apiVersion: 'apps/v1'
  kind: 'Deployment'
  metadata: ObjectMeta & { name: string }
}

/** The only label of the Deployment's selector: it depends on the parent's name alone, so it never changes. */
export const SELECTOR_LABEL = 'pulsarcrd'
export const CONTAINER_NAME = 'pulsarconsumer'

const LABEL_VALUE_MAX_LENGTH = 63
const OBJECT_NAME_MAX_LENGTH = 253

/**
 * Parent labels that are not copied: `controller-uid` is Metacontroller's selector (a copied value would make the
 * child fail it), `pod-template-hash` is the Deployment controller's, and `pulsarcrd` is always ours, so the
 * selector matches the pod template whatever the parent says.
 */
const LABELS_OWNED_ELSEWHERE = new Set(['controller-uid', 'pod-template-hash', SELECTOR_LABEL])

/**
 * `<base><suffix>` when it fits in `maxLength`; otherwise the base is cut and followed by a hash of the whole base,
 * so that long names still give a valid, stable and distinct result.
 */
export function boundedName (base: string, suffix: string, maxLength: number): string {
  const full = `${base}${suffix}`
  if (full.length <= maxLength) return full
  const hash = createHash('sha256').update(base).digest('hex').slice(0, 10)
  const cut = base.slice(0, maxLength - suffix.length - hash.length - 1).replace(/[-.]+$/, '')
  return `${cut}-${hash}${suffix}`
}

export function deploymentName (parentName: string): string {
  return boundedName(parentName, '-deployment', OBJECT_NAME_MAX_LENGTH)
}

/** `<n>-pulsarcrd` as the original had it, kept within the 63 characters of a label value. */
export function selectorValue (parentName: string): string {
  return boundedName(parentName, '-pulsarcrd', LABEL_VALUE_MAX_LENGTH)
}

/** The parent's labels (already valid, since the API server accepted them) plus the selector label, sorted. */
export function consumerLabels (parent: ParentMetadata): Record<string, string> {
  // Entries, not assignments: an assigned `__proto__` label would be lost (and would reach for the prototype).
  const labels = Object.entries(parent.labels).filter(([key]) => !LABELS_OWNED_ELSEWHERE.has(key) && key !== SELECTOR_LABEL)
  labels.push([SELECTOR_LABEL, selectorValue(parent.name)])
  return Object.fromEntries(labels.sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
}

/**
 * The one child: a Deployment of consumers. Only fields the API server keeps as given; imagePullPolicy, strategy
 * and the other defaulted fields are left to the server.
 */
export function consumerDeployment (parent: ParentMetadata, spec: PulsarConsumerSpec): ConsumerDeployment {
  const { name, namespace } = parent
  const labels = consumerLabels(parent)
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: deploymentName(name),
      ...(namespace === undefined ? {} : { namespace }),
      labels
    },
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: { [SELECTOR_LABEL]: selectorValue(name) } },
      template: {
        metadata: { labels: { ...labels } },
        spec: {
          containers: [{
            name: CONTAINER_NAME,
            image: spec.image,
            env: [
              { name: 'PULSAR_SERVER', value: spec.serverAddress },
              { name: 'PULSAR_TOPIC', value: spec.topic },
              { name: 'PULSAR_SUBSCRIPTION_NAME', value: spec.subscriptionName }
            ]
          }]
        }
      }
    }
  }
}
