import type { CompositeController } from '../framework/index.js'
import { pulsarConsumerResource } from './resource.js'
import { syncPulsarConsumer } from './sync.js'

/** PulsarConsumer: a Deployment of Pulsar consumers sharing one subscription. */
export const pulsarConsumer: CompositeController<typeof pulsarConsumerResource> = {
  type: 'composite',
  name: 'pulsar-consumer',
  resource: pulsarConsumerResource,
  needs: [],
  childResources: [{ apiVersion: 'apps/v1', kind: 'Deployment', resource: 'deployments', updateStrategy: 'InPlace' }],
  hooks: { sync: syncPulsarConsumer }
}
