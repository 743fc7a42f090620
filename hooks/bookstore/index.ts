import type { CompositeController } from '../framework/index.js'
import { bookStoreResource } from './resource.js'
import { syncBookStore } from './sync.js'

/** BookStore: a MongoDB StatefulSet with its claims and Service, and the bookstore app's Deployment and Service. */
export const bookStore: CompositeController<typeof bookStoreResource> = {
  type: 'composite',
  name: 'bookstore',
  resource: bookStoreResource,
  needs: [],
  childResources: [
    { apiVersion: 'v1', kind: 'Service', resource: 'services', updateStrategy: 'InPlace' },
    { apiVersion: 'apps/v1', kind: 'StatefulSet', resource: 'statefulsets', updateStrategy: 'InPlace' },
    { apiVersion: 'v1', kind: 'PersistentVolumeClaim', resource: 'persistentvolumeclaims', updateStrategy: 'InPlace' },
    { apiVersion: 'apps/v1', kind: 'Deployment', resource: 'deployments', updateStrategy: 'InPlace' }
  ],
  hooks: { sync: syncBookStore }
}
