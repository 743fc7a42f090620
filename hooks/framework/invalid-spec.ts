import { HookError, type UnservableSpecError } from './errors.js'
import { parentStatus, type ParentOf } from './parent.js'
import { unchangingAnswer, type Stamp } from './wire/last-applied.js'
import type { CompositeRequest, CompositeResponse, DecoratorRequest, DecoratorResponse, KubernetesObject, ObjectMap } from './wire/schemas.js'

/**
 * The answer for a parent whose spec the hook cannot serve: Ready=False, reason InvalidSpec (the message naming each
 * bad field) or AnswerTooLarge (answer-budget.ts), and every observed child kept exactly as it is. Metacontroller
 * deletes each observed child that a 200 answer leaves out and updates or recreates each one whose answer differs, so
 * each child is answered as its last-applied configuration, in which Metacontroller's merge finds nothing to change
 * (wire/last-applied.ts). Where a child cannot be answered so, the answer is the 422 instead, which changes nothing
 * either: Metacontroller shows it in a SyncError event and retries with backoff.
 */

/** The most children a 422 names; the rest are counted. */
const LISTED_CHILDREN = 3

const DECORATOR_ANNOTATION = 'metacontroller.k8s.io/decorator-controller'

/** What an answer needs of the hook's context: the parent, and the time to stamp a changed condition with. */
interface Context {
  now: string
  parent: ParentOf<any>
}

function field (object: unknown, name: string): unknown {
  return typeof object === 'object' && object !== null ? (object as Record<string, unknown>)[name] : undefined
}

/** The stamp of a CompositeController's children, or why the hook cannot tell it. */
function compositeStamp (request: CompositeRequest, { parent }: Context): Stamp | string {
  // Without generateSelector, each child's labels must match the parent's own spec.selector, which this does not check.
  if (field(field(request.controller, 'spec'), 'generateSelector') !== true || parent.uid === undefined) {
    return 'the CompositeController does not generate its selector (spec.generateSelector), so the hook cannot tell which labels Metacontroller requires'
  }
  return { namespace: parent.namespace, labels: { 'controller-uid': parent.uid }, annotations: {} }
}

/** The stamp of a DecoratorController's attachments, or why the hook cannot tell it. */
function decoratorStamp (request: DecoratorRequest, { parent }: Context): Stamp | string {
  const name = field(field(request.controller, 'metadata'), 'name')
  if (typeof name !== 'string') return 'the request names no DecoratorController (controller.metadata.name)'
  return { namespace: parent.namespace, labels: {}, annotations: { [DECORATOR_ANNOTATION]: name } }
}

/** Every observed child that needs an answer, answered as it is; a 422 when one of them cannot be. */
function keptChildren (observed: ObjectMap, stamp: Stamp | string, error: UnservableSpecError): KubernetesObject[] {
  const kept: KubernetesObject[] = []
  const reasons: string[] = []
  for (const group of Object.values(observed)) {
    for (const child of Object.values(group)) {
      // Metacontroller neither deletes nor updates a child that is being deleted already, whatever the answer.
      if (child.metadata.deletionTimestamp !== undefined) continue
      const result = typeof stamp === 'string' ? { reason: stamp } : unchangingAnswer(child, stamp)
      if ('answer' in result) kept.push(result.answer)
      else if (!reasons.includes(result.reason)) reasons.push(result.reason)
    }
  }
  if (reasons.length > 0) {
    const more = reasons.length > LISTED_CHILDREN ? `; and ${reasons.length - LISTED_CHILDREN} more` : ''
    throw new HookError(422, `${error.message} The status cannot say so, as no answer would leave every child as it is: ${reasons.slice(0, LISTED_CHILDREN).join('; ')}${more}.`)
  }
  return kept
}

/** The parent's status: its own fields as observed (what its children still are), and Ready=False with the error's reason. */
function invalidSpecStatus ({ parent, now }: Context, error: UnservableSpecError): Record<string, unknown> {
  return parentStatus(parent, now, parent.status, { ready: false, reason: error.reason, message: error.message })
}

export function compositeInvalidSpecAnswer (finalizing: boolean, request: CompositeRequest, context: Context, error: UnservableSpecError): CompositeResponse {
  const children = keptChildren(request.children, compositeStamp(request, context), error)
  return { status: invalidSpecStatus(context, error), children, ...(finalizing ? { finalized: false } : {}) }
}

export function decoratorInvalidSpecAnswer (finalizing: boolean, request: DecoratorRequest, context: Context, error: UnservableSpecError): DecoratorResponse {
  const attachments = keptChildren(request.attachments, decoratorStamp(request, context), error)
  return { status: invalidSpecStatus(context, error), attachments, ...(finalizing ? { finalized: false } : {}) }
}
