import type { KubernetesObject } from '../../hooks/framework/wire/schemas.js'
import { goJson } from './encoding.js'
import { fieldSet, managedEntry } from './managed-fields.js'

/** A custom resource (a parent) as the API server returns it after `kubectl apply`, and after its hook's status. */

export interface CustomResourceOptions {
  apiVersion: string
  kind: string
  name: string
  namespace: string
  uid: string
  resourceVersion: string
  createdAt: string
  /** The spec as the API server returns it (the CRD's defaults applied). */
  spec: unknown
  /** The spec as written by `kubectl apply`, for its last-applied annotation; default `spec`. */
  appliedSpec?: unknown
  labels?: Record<string, string>
  /** Default 1. */
  generation?: number
  /** The status as last written by Metacontroller, at `statusWrittenAt`; absent on a parent no hook has answered yet. */
  status?: unknown
  statusWrittenAt?: string
  deletionTimestamp?: string
}

export function customResource (options: CustomResourceOptions): KubernetesObject {
  const { apiVersion, kind, name, namespace, spec, appliedSpec = spec, labels, generation = 1, status, deletionTimestamp, createdAt } = options
  const applied = { apiVersion, kind, metadata: { annotations: {}, ...(labels === undefined ? {} : { labels }), name, namespace }, spec: appliedSpec }
  const specFields = typeof appliedSpec === 'object' && appliedSpec !== null ? { 'f:spec': { '.': {}, ...fieldSet(Object.keys(appliedSpec)) } } : {}
  const kubectlFields = {
    'f:metadata': {
      'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} },
      ...(labels === undefined ? {} : { 'f:labels': { '.': {}, ...fieldSet(Object.keys(labels)) } })
    },
    ...specFields
  }
  return {
    apiVersion,
    kind,
    metadata: {
      name,
      namespace,
      uid: options.uid,
      resourceVersion: options.resourceVersion,
      generation,
      creationTimestamp: createdAt,
      ...(deletionTimestamp === undefined ? {} : { deletionTimestamp, deletionGracePeriodSeconds: 0, finalizers: ['foregroundDeletion'] }),
      ...(labels === undefined ? {} : { labels }),
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': `${goJson(applied)}\n` },
      managedFields: [
        managedEntry(apiVersion, 'kubectl-client-side-apply', createdAt, kubectlFields),
        ...(status === undefined
          ? []
          : [managedEntry(apiVersion, 'metacontroller', options.statusWrittenAt ?? createdAt, { 'f:status': { '.': {}, ...fieldSet(Object.keys(status as object)) } }, 'status')])
      ]
    } as KubernetesObject['metadata'],
    spec,
    ...(status === undefined ? {} : { status })
  }
}
