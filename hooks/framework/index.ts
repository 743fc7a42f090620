/**
 * The controller framework: everything a controller under hooks/ imports, and the only module of this folder it
 * imports. A controller is a resource (`customResource`), a pure function from the hook request to the response, and
 * the declaration that ties them (`CompositeController` or `DecoratorController`), with the settings of its own it
 * reads from the environment, if any (`controllerSettings`).
 */

export type { ChildResource, CompositeController, DecoratorController, Drift, HookContext } from './controller.js'
export { applyRules, celString, customResource, IMAGE_REFERENCE_MAX_LENGTH, IMAGE_REPOSITORY_MAX_LENGTH, IMAGE_TAG_MAX_LENGTH, VISIBLE_ASCII, type ApplyRule } from './custom-resource.js'
export { HookError, unprocessableSpec } from './errors.js'
export { controllerSettings, flag, integer, list, text } from './settings.js'
export { parentStatus, type ParentMetadata, type ParentOf, type Readiness } from './parent.js'
export { kubernetesTime, type ConditionInput } from './wire/conditions.js'
export { MAX_OBSERVED_DEPTH, nestsDeeperThan, observedByName, recommendedLabels } from './wire/objects.js'
export type { CompositeRequest, CompositeResponse, DecoratorRequest, DecoratorResponse, KubernetesObject } from './wire/schemas.js'
