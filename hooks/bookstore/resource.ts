import { Type, type Static } from '@sinclair/typebox'
import { applyRules, celString, customResource, IMAGE_REPOSITORY_MAX_LENGTH, IMAGE_TAG_MAX_LENGTH, VISIBLE_ASCII, type ApplyRule } from '../framework/index.js'
import { MAX_BYTES, QUANTITY_SYNTAX } from './quantity.js'

/** Every BookStore's StatefulSet is `<name>-mongodb`: its Pods' controller-revision-hash label must stay within 63 characters. */
const MAX_NAME_LENGTH = 44

/** Each database replica adds a claim to every answer; a MongoDB replica set has at most 50 members. */
export const MAX_DB_REPLICAS = 50

const MAX_DB_SIZE_LENGTH = 64

const ImageRepositorySchema = (options: { description: string, default?: string }) => Type.String({ minLength: 1, maxLength: IMAGE_REPOSITORY_MAX_LENGTH, pattern: `^${VISIBLE_ASCII}+$`, ...options })

const ImageTagSchema = Type.String({
  pattern: `^[A-Za-z0-9_][A-Za-z0-9_.-]{0,${IMAGE_TAG_MAX_LENGTH - 1}}$`,
  maxLength: IMAGE_TAG_MAX_LENGTH,
  default: 'latest',
  description: 'Image tag.'
})

const ImagePullPolicySchema = Type.Union([Type.Literal('Always'), Type.Literal('IfNotPresent'), Type.Literal('Never')], {
  description: 'Image pull policy; when unset, Kubernetes chooses (Always for the latest tag, IfNotPresent otherwise).'
})

const PortSchema = (description: string, defaultValue: number) => Type.Integer({ minimum: 1, maximum: 65535, default: defaultValue, description })

export const BookAppSchema = Type.Object({
  repository: ImageRepositorySchema({ description: 'Image repository of the bookstore app, e.g. akash125/pyapp.' }),
  tag: ImageTagSchema,
  imagePullPolicy: Type.Optional(ImagePullPolicySchema),
  replicas: Type.Integer({ minimum: 0, maximum: 2147483647, default: 1, description: 'Replicas of the app Deployment.' }),
  port: PortSchema('Port of the app Service.', 80),
  targetPort: PortSchema('Port the app container listens on.', 3000),
  serviceType: Type.Union([Type.Literal('ClusterIP'), Type.Literal('NodePort'), Type.Literal('LoadBalancer')], {
    default: 'ClusterIP',
    description: 'Type of the app Service.'
  })
})

/**
 * What `bookDB.dbSize` accepts, each rule with its message: the API server checks them at apply time, and the hook
 * checks the same (bookstore/sync.ts) and answers the same message. A fraction of a byte rounds up.
 */
export const DB_SIZE_RULES = {
  quantity: {
    rule: `type(self) == int || self.matches(${celString(QUANTITY_SYNTAX.source)})`,
    message: 'must be a size such as 1Gi, 500Mi or 2G: a number with an optional suffix (Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E)'
  },
  exactNumber: {
    rule: `type(self) != int || self <= ${Number.MAX_SAFE_INTEGER}`,
    message: `a plain number of bytes must be at most ${Number.MAX_SAFE_INTEGER} (2^53 - 1), beyond which JSON numbers are not read exactly: write a larger size with a suffix, such as 8Pi`
  },
  atLeastOneByte: {
    rule: "!isQuantity(string(self)) || !quantity(string(self)).isLessThan(quantity('1'))",
    message: 'must be at least one byte'
  },
  belowMaximum: {
    rule: `!isQuantity(string(self)) || quantity(string(self)).isLessThan(quantity('${MAX_BYTES}'))`,
    message: `must be less than 8Ei (${MAX_BYTES} bytes), the most a Kubernetes quantity holds`
  }
} satisfies Record<string, ApplyRule>

export const BookDBSchema = Type.Object({
  repository: ImageRepositorySchema({ description: 'Image repository of the database.', default: 'mongo' }),
  tag: ImageTagSchema,
  imagePullPolicy: Type.Optional(ImagePullPolicySchema),
  replicas: Type.Integer({ minimum: 0, maximum: MAX_DB_REPLICAS, default: 1, description: 'Replicas of the database StatefulSet; each has its own claim.' }),
  port: PortSchema('Port MongoDB listens on (passed to mongod as --port).', 27017),
  // The longest quantity below 8Ei, 19 digits with a fraction and a suffix, fits in MAX_DB_SIZE_LENGTH with room.
  dbSize: Type.Union([Type.Integer(), Type.String({ maxLength: MAX_DB_SIZE_LENGTH })], {
    errorMessage: `Expected a number of bytes, or a quantity of at most ${MAX_DB_SIZE_LENGTH} characters such as 1Gi`,
    'x-kubernetes-int-or-string': true,
    ...applyRules(...Object.values(DB_SIZE_RULES)),
    default: '1Gi',
    description: 'Size of each database volume (a quantity such as 1Gi). Raising it resizes the claims; volumes never shrink.'
  }),
  storageClassName: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
    description: 'StorageClass of new claims; the cluster default when unset. Existing claims keep theirs.'
  }))
}, { default: {} })

export const BookStoreSpecSchema = Type.Object({
  bookApp: BookAppSchema,
  bookDB: BookDBSchema
})
export type BookStoreSpec = Static<typeof BookStoreSpecSchema>

const ReplicaCountsSchema = {
  replicas: Type.Integer({ description: 'Replicas asked for by the spec.' }),
  readyReplicas: Type.Integer({ description: 'Ready replicas, from the observed child.' })
}

export const bookStoreResource = customResource({
  group: 'blog.velotio.com',
  version: 'v1alpha1',
  kind: 'BookStore',
  name: {
    maxLength: MAX_NAME_LENGTH,
    // Service names are DNS labels that start with a letter.
    pattern: { regex: '^[a-z]([-a-z0-9]*[a-z0-9])?$', meaning: "start with a letter, hold only lowercase letters, digits and '-', and end with a letter or digit" },
    why: 'its children are named after it (Service <name>-bookstore, StatefulSet <name>-mongodb, whose Pods carry <name>-mongodb-<hash> in a label of at most 63 characters)'
  },
  spec: BookStoreSpecSchema,
  status: {
    app: Type.Optional(Type.Object(ReplicaCountsSchema)),
    db: Type.Optional(Type.Object({
      ...ReplicaCountsSchema,
      volumeSize: Type.String({ description: 'Size the database claims are requested at (the largest, when they differ).' })
    }))
  },
  printerColumns: [
    { name: 'Service', type: 'string', jsonPath: '.spec.bookApp.serviceType' },
    { name: 'App Ready', type: 'integer', jsonPath: '.status.app.readyReplicas' },
    { name: 'DB Ready', type: 'integer', jsonPath: '.status.db.readyReplicas' },
    { name: 'Volume', type: 'string', jsonPath: '.status.db.volumeSize' }
  ]
})

export type BookStoreStatus = Static<typeof bookStoreResource.statusSchema>
