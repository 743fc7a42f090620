import { Type, type Static, type TSchema } from '@sinclair/typebox'

/**
 * Metacontroller's v2 hook wire format (sync and finalize), shared by every controller.
 * Objects are open: a schema here must never strip a child's `spec` or `data`.
 */

export const KubernetesObjectSchema = Type.Object(
  {
    apiVersion: Type.String({ minLength: 1 }),
    kind: Type.String({ minLength: 1 }),
    metadata: Type.Object(
      {
        name: Type.Optional(Type.String()),
        namespace: Type.Optional(Type.String()),
        uid: Type.Optional(Type.String()),
        generation: Type.Optional(Type.Integer()),
        labels: Type.Optional(Type.Record(Type.String(), Type.String())),
        annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
        deletionTimestamp: Type.Optional(Type.String())
      },
      { additionalProperties: true }
    ),
    spec: Type.Optional(Type.Unknown()),
    status: Type.Optional(Type.Unknown())
  },
  { additionalProperties: true }
)
export type KubernetesObject = Static<typeof KubernetesObjectSchema>

/** `{ "<Kind>.<apiVersion>": { "<namespace>/<name>": object } }`, one group per child rule, present even when empty. */
export const ObjectMapSchema = Type.Record(Type.String(), Type.Record(Type.String(), KubernetesObjectSchema))
export type ObjectMap = Static<typeof ObjectMapSchema>

export const ConditionSchema = Type.Object({
  type: Type.String(),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.String(),
  message: Type.String(),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  observedGeneration: Type.Optional(Type.Integer())
})
export type Condition = Static<typeof ConditionSchema>

/** The status fields every controller reports: the generation it acted on, and its conditions. */
export const CommonStatusProperties = {
  observedGeneration: Type.Optional(Type.Integer()),
  conditions: Type.Optional(Type.Array(ConditionSchema))
}

const controllerField = Type.Object({}, { additionalProperties: true })

/**
 * `finalizing` as each hook receives it. Metacontroller v2 always sends it: `true` to the finalize hook, `false` to sync
 * (also for a parent being deleted, when the controller has no finalize hook). A request that says otherwise is not
 * one Metacontroller sends to that hook, and nothing is done for it.
 */
const Finalizing = {
  sync: Type.Optional(Type.Literal(false, {
    errorMessage: 'must be false or absent on a sync hook: Metacontroller sends finalizing: true only to a finalize hook, so nothing was done; send the request there'
  })),
  finalize: Type.Literal(true, {
    errorMessage: 'must be true on a finalize hook, as Metacontroller sends it, so nothing was done; a request with finalizing false or absent is a sync request: send it to the sync hook'
  })
}

function compositeRequest<F extends TSchema> (finalizing: F) {
  return Type.Object(
    {
      controller: controllerField,
      parent: KubernetesObjectSchema,
      children: ObjectMapSchema,
      related: Type.Optional(ObjectMapSchema),
      finalizing
    },
    { additionalProperties: true }
  )
}

/** A CompositeController's hook requests, by hook. */
export const CompositeRequestSchemas = { sync: compositeRequest(Finalizing.sync), finalize: compositeRequest(Finalizing.finalize) }
export type CompositeRequest = Static<typeof CompositeRequestSchemas.sync> | Static<typeof CompositeRequestSchemas.finalize>

export const CompositeResponseSchema = Type.Object(
  {
    status: Type.Record(Type.String(), Type.Unknown()),
    children: Type.Array(KubernetesObjectSchema),
    resyncAfterSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    finalized: Type.Optional(Type.Boolean())
  },
  { additionalProperties: false }
)
export type CompositeResponse = Static<typeof CompositeResponseSchema>

function decoratorRequest<F extends TSchema> (finalizing: F) {
  return Type.Object(
    {
      controller: controllerField,
      object: KubernetesObjectSchema,
      attachments: ObjectMapSchema,
      related: Type.Optional(ObjectMapSchema),
      finalizing
    },
    { additionalProperties: true }
  )
}

/** A DecoratorController's hook requests, by hook. */
export const DecoratorRequestSchemas = { sync: decoratorRequest(Finalizing.sync), finalize: decoratorRequest(Finalizing.finalize) }
export type DecoratorRequest = Static<typeof DecoratorRequestSchemas.sync> | Static<typeof DecoratorRequestSchemas.finalize>

export const DecoratorResponseSchema = Type.Object(
  {
    labels: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]))),
    annotations: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]))),
    status: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    attachments: Type.Array(KubernetesObjectSchema),
    resyncAfterSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    finalized: Type.Optional(Type.Boolean())
  },
  { additionalProperties: false }
)
export type DecoratorResponse = Static<typeof DecoratorResponseSchema>

/** The body of every error answer, and nothing else: the status's name, and what was wrong and what to do. */
export const ErrorResponseSchema = Type.Object({
  error: Type.String(),
  message: Type.String()
}, { additionalProperties: false })
export type ErrorResponse = Static<typeof ErrorResponseSchema>
