import { Type, type Static } from '@sinclair/typebox'
import { customResource, IMAGE_REFERENCE_MAX_LENGTH, VISIBLE_ASCII } from '../framework/index.js'

export const PULSAR_SERVICE_URL_PATTERN = `^pulsar(\\+ssl)?://${VISIBLE_ASCII}+$`
const DEFAULT_CONSUMER_IMAGE = 'krvarma/pulsarconsumer:latest'

const int32 = { minimum: 0, maximum: 2147483647, format: 'int32' } as const

// The strings become container env values: an empty one would be dropped by the API server and churn the apply.
// A service URL may list several brokers (pulsar://a:6650,b:6650); a topic is persistent://<tenant>/<namespace>/<name>.
export const PulsarConsumerSpecSchema = Type.Object({
  serverAddress: Type.String({
    pattern: PULSAR_SERVICE_URL_PATTERN,
    maxLength: 1024,
    example: 'pulsar://localhost:6650',
    description: 'Pulsar service URL the consumers connect to: pulsar://host:6650 or pulsar+ssl://host:6651.'
  }),
  topic: Type.String({ minLength: 1, maxLength: 512, description: 'Topic to consume.' }),
  subscriptionName: Type.String({ minLength: 1, maxLength: 256, description: 'Subscription the consumers share.' }),
  replicas: Type.Integer({ ...int32, description: 'Number of consumer pods.' }),
  image: Type.String({ minLength: 1, maxLength: IMAGE_REFERENCE_MAX_LENGTH, default: DEFAULT_CONSUMER_IMAGE, description: 'Consumer container image.' })
})
export type PulsarConsumerSpec = Static<typeof PulsarConsumerSpecSchema>

export const pulsarConsumerResource = customResource({
  group: 'pulsar.pulsarconsumer.krvarma.com',
  version: 'v1',
  kind: 'PulsarConsumer',
  spec: PulsarConsumerSpecSchema,
  status: {
    server: Type.Optional(Type.String({ description: 'Service URL given to the consumers.' })),
    topic: Type.Optional(Type.String({ description: 'Topic given to the consumers.' })),
    subscription: Type.Optional(Type.String({ description: 'Subscription given to the consumers.' })),
    replicas: Type.Optional(Type.Integer({ ...int32, description: 'Replicas asked of the Deployment.' })),
    readyReplicas: Type.Optional(Type.Integer({ ...int32, description: 'Ready consumer pods, as the Deployment reports them.' }))
  },
  printerColumns: [
    { name: 'Server', type: 'string', jsonPath: '.status.server' },
    { name: 'Topic', type: 'string', jsonPath: '.status.topic' },
    { name: 'Subscription', type: 'string', jsonPath: '.status.subscription' },
    { name: 'Replicas', type: 'integer', jsonPath: '.status.replicas' }
  ]
})

export type PulsarConsumerStatus = Static<typeof pulsarConsumerResource.statusSchema>
