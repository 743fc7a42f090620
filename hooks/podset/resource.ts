import { Type, type Static } from '@sinclair/typebox'
import { customResource, IMAGE_REFERENCE_MAX_LENGTH, VISIBLE_ASCII } from '../framework/index.js'

export const DEFAULT_REPLICAS = 1
export const DEFAULT_IMAGE = 'busybox'
export const DEFAULT_COMMAND = ['sleep', '3600']
/**
 * Every pod comes back in every request, about 5.5 KB with its managedFields: 2,000 make an 11 MB request, within the
 * default HOOKS_BODY_LIMIT. With the command's bounds below, the answer that asks for them stays within the answer
 * budget however long the names, the image and the arguments (test/answer-bounds.test.ts computes it).
 */
export const MAX_REPLICAS = 2000
/** A command's arguments: a flag with its value, a path, a URL or a short script each. */
export const MAX_COMMAND_ARGUMENTS = 8
export const MAX_ARGUMENT_LENGTH = 128

export const PodSetSpecSchema = Type.Object({
  replicas: Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: MAX_REPLICAS,
    default: DEFAULT_REPLICAS,
    description: 'Number of pods, named <name>-pod-0 .. <name>-pod-<replicas-1>; a scale-down removes the highest ordinals.'
  }),
  image: Type.String({
    pattern: `^${VISIBLE_ASCII}+$`,
    maxLength: IMAGE_REFERENCE_MAX_LENGTH,
    default: DEFAULT_IMAGE,
    description: 'Image of the pods\' only container.'
  }),
  command: Type.Array(Type.String({ maxLength: MAX_ARGUMENT_LENGTH }), {
    minItems: 1,
    maxItems: MAX_COMMAND_ARGUMENTS,
    default: DEFAULT_COMMAND,
    description: `Command of the pods' only container: at most ${MAX_COMMAND_ARGUMENTS} arguments of ${MAX_ARGUMENT_LENGTH} characters. Changing it (or the image) replaces the pods.`
  })
}, {
  // The original sample's `spec:` holds only a comment, so it arrives as null: this default lets it apply unchanged.
  default: {}
})
export type PodSetSpec = Static<typeof PodSetSpecSchema>

export const podSetResource = customResource({
  group: 'batch.tutorial.kubebuilder.io',
  version: 'v1',
  kind: 'PodSet',
  name: { maxLength: 63, why: 'its pods carry it in their app label, a label value' },
  spec: PodSetSpecSchema,
  status: {
    readyReplicas: Type.Optional(Type.Integer({ format: 'int32', minimum: 0, description: 'Pods of the spec that are running or pending and not being deleted.' })),
    podNames: Type.Optional(Type.Array(Type.String(), { description: 'Names of those pods, in ordinal order.' }))
  },
  printerColumns: [
    { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' }
  ]
})

export type PodSetStatus = Static<typeof podSetResource.statusSchema>
