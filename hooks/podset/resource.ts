import { Type, type Static } from '@sinclair/typebox'
import { customResource } from '../framework/index.js'

export const DEFAULT_REPLICAS = 1
export const DEFAULT_IMAGE = 'busybox'
export const DEFAULT_COMMAND = ['sleep', '3600']
/**
 * Every pod comes back in every sync request, as the API server stores it: its image and command twice in its spec
 * and status, and twice more in the copy Metacontroller keeps in an annotation, where JSON escapes each escape again.
 * With the longest names, 2,000 pods take 12.2 MB before their image and command, so those are bounded below to keep
 * the worst request within the default HOOKS_BODY_LIMIT (test/answer-bounds.test.ts computes it).
 */
export const MAX_REPLICAS = 2000
/** A reference with its registry and tag, or a digest: four copies of each character per pod. */
export const MAX_IMAGE_LENGTH = 255
/** The characters of an image reference, none of which JSON escapes. */
const IMAGE_CHARACTER = '[-a-zA-Z0-9._/:@]'
/** A command's arguments: a program, a flag and a short script, in characters JSON writes in one byte. */
export const MAX_COMMAND_ARGUMENTS = 4
export const MAX_ARGUMENT_LENGTH = 96
/** Printable ASCII but `"` and `\`, which JSON writes in two bytes, and in four in the annotation's copy. */
const ARGUMENT_CHARACTER = '[ !#-\\[\\]-~]'

export const PodSetSpecSchema = Type.Object({
  replicas: Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: MAX_REPLICAS,
    default: DEFAULT_REPLICAS,
    description: 'Number of pods, named <name>-pod-0 .. <name>-pod-<replicas-1>; a scale-down removes the highest ordinals.'
  }),
  image: Type.String({
    pattern: `^${IMAGE_CHARACTER}+$`,
    maxLength: MAX_IMAGE_LENGTH,
    default: DEFAULT_IMAGE,
    description: `Image of the pods' only container: a reference of at most ${MAX_IMAGE_LENGTH} characters.`
  }),
  command: Type.Array(Type.String({ pattern: `^${ARGUMENT_CHARACTER}*$`, maxLength: MAX_ARGUMENT_LENGTH }), {
    minItems: 1,
    maxItems: MAX_COMMAND_ARGUMENTS,
    default: DEFAULT_COMMAND,
    description: `Command of the pods' only container: at most ${MAX_COMMAND_ARGUMENTS} arguments of ${MAX_ARGUMENT_LENGTH} printable ASCII characters but " and \\. Changing it (or the image) replaces the pods.`
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
