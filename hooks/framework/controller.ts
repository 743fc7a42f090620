import type { CustomResource } from './custom-resource.js'
import type { PostgresIo } from '../database/pool.js'
import { answerBudget, answerPassing, answerTooLarge } from './answer-budget.js'
import { UnservableSpecError } from './errors.js'
import { compositeInvalidSpecAnswer, decoratorInvalidSpecAnswer } from './invalid-spec.js'
import { readFields, withReadFieldsOnly, type ReadFields } from './observed-fields.js'
import { readParent, type ParentOf } from './parent.js'
import type { CompositeRequest, CompositeResponse, DecoratorRequest, DecoratorResponse, KubernetesObject } from './wire/schemas.js'

/**
 * The contract of a controller: what it has (a resource, hooks, child kinds) and the I/O it declares. Routes,
 * manifests, the render tool and the e2e install are all derived from it.
 */

/**
 * Every kind of I/O a controller can declare in `needs`. The server connects each once per process, and hands a
 * controller only what it declared.
 */
export interface Io {
  postgres: PostgresIo
}
export type Need = keyof Io

/** What the hooks of a controller that declares no I/O get: nothing. */
export type NoIo = Record<never, never>

/**
 * What a sync found when it repaired what its controller keeps outside Kubernetes (PostgresWriter's row): `changed`
 * or `missing` since the controller last wrote it.
 */
export type Drift = 'changed' | 'missing'

/** What a hook gets besides its request; `io` is what its controller's `connect` built (NoIo for a controller without I/O). */
export interface HookContext<R extends CustomResource, I extends object = NoIo> {
  /** The time to stamp on a condition whose status changes. */
  now: string
  /** The parent, already checked to be of the controller's kind and to have a usable name. */
  parent: ParentOf<R>
  io: I
  /** Counts a repair of what the controller keeps outside Kubernetes, found changed or missing (a metric). */
  driftRepaired: (drift: Drift) => void
  /** When the call arrived (its headers), as `performance.now()`: a deadline counts from it, its body's arrival included. */
  arrivedAt: number
}

export type HookName = 'sync' | 'finalize'

type Hook<Request, Response, Context> = (request: Request, context: Context) => Response | Promise<Response>

export interface Hooks<Request, Response, Context> {
  sync: Hook<Request, Response, Context>
  /** When present, Metacontroller calls it before a parent goes, and holds a finalizer on every parent until it is done. */
  finalize?: Hook<Request, Response, Context>
}

export interface ChildResource {
  apiVersion: string
  /** What objects of it are called in a request's `children` and in an answer. */
  kind: string
  /** The plural Metacontroller's childResources name it by. */
  resource: string
  updateStrategy: 'InPlace' | 'OnDelete' | 'Recreate'
  /**
   * The top-level fields of an observed child of this kind that the hooks read besides `apiVersion`, `kind` and
   * `metadata`, such as `['status']`. The hooks then get only those (observed-fields.ts), and the server leaves the
   * others out of a large request before parsing it. Without it, the hooks get every field.
   */
  observedFields?: readonly string[]
}

interface ControllerBase<R extends CustomResource, N extends Need, I extends object> {
  /** The URL segment and the Metacontroller controller's name. */
  name: string
  resource: R
  /** The I/O its hooks use: `[]` for none. */
  needs: readonly N[]
  /**
   * Builds what its hooks get as `io` from the I/O it declared. The server calls it once per process, when it sets
   * up the controller's routes, so that what lasts across calls (a store that remembers the tables it found fit)
   * belongs to the server that made it, not to a module. Without it, the hooks get the declared I/O itself.
   */
  connect?: (io: Pick<Io, N>) => I
  resyncPeriodSeconds?: number
}

export interface CompositeController<R extends CustomResource = CustomResource, N extends Need = never, I extends object = Pick<Io, N>> extends ControllerBase<R, N, I> {
  type: 'composite'
  childResources: ChildResource[]
  hooks: Hooks<CompositeRequest, CompositeResponse, HookContext<R, I>>
}

export interface DecoratorController<R extends CustomResource = CustomResource, N extends Need = never, I extends object = Pick<Io, N>> extends ControllerBase<R, N, I> {
  type: 'decorator'
  hooks: Hooks<DecoratorRequest, DecoratorResponse, HookContext<R, I>>
}

/** Any controller, whatever its resource and needs: what the registry and the code derived from it hold. */
export type Controller = CompositeController<any, any, any> | DecoratorController<any, any, any>

/** The hooks defined, by name: `sync`, and `finalize` when there is one. */
export function definedHooks<H> (hooks: { sync: H, finalize?: H }): Array<[HookName, H]> {
  return hooks.finalize === undefined ? [['sync', hooks.sync]] : [['sync', hooks.sync], ['finalize', hooks.finalize]]
}

/**
 * A hook as the server runs it. `inFull` gives the request with every field of its observed children, where the
 * request given may lack those its controller does not read (observed-fields.ts); without it, the request is whole.
 */
export type ServedHook<Request, Response> = (request: Request, context: HookContext<any, any>, inFull?: () => Request) => Promise<Response>

export interface ServedHooks<Request, Response> {
  sync: ServedHook<Request, Response>
  finalize?: ServedHook<Request, Response>
}

/**
 * A controller's hooks as the server runs them: each gets the observed children's fields its controller reads
 * (observed-fields.ts); a hook that finds its parent's spec unusable (InvalidSpecError), or whose answer would be
 * larger than the answer budget of HOOKS_BODY_LIMIT `bodyLimit` (answer-budget.ts), answers so on the resource,
 * keeping every child as it is (invalid-spec.ts), read from the request in full. The answer is measured before it is
 * serialised.
 */
export function servedHooks (controller: CompositeController<any, any, any>, bodyLimit: number): ServedHooks<CompositeRequest, CompositeResponse>
export function servedHooks (controller: DecoratorController<any, any, any>, bodyLimit: number): ServedHooks<DecoratorRequest, DecoratorResponse>
export function servedHooks (controller: Controller, bodyLimit: number): ServedHooks<any, CompositeResponse | DecoratorResponse> {
  type AnyHook = Hook<any, CompositeResponse | DecoratorResponse, HookContext<any, any>>
  const answer = controller.type === 'composite' ? compositeInvalidSpecAnswer : decoratorInvalidSpecAnswer
  const budget = answerBudget(bodyLimit)
  const fields = readFieldsOf(controller)
  const served = (hook: HookName, run: AnyHook): ServedHook<any, CompositeResponse | DecoratorResponse> =>
    async (request, context, inFull = () => request) => {
      let response: CompositeResponse | DecoratorResponse
      try {
        response = await run(fields === undefined ? request : withReadFieldsOnly(request, fields), context)
      } catch (error) {
        if (error instanceof UnservableSpecError) return answer(hook === 'finalize', inFull(), context, error)
        throw error
      }
      const passed = answerPassing(response, budget)
      return passed === undefined ? response : answer(hook === 'finalize', inFull(), context, answerTooLarge(controller.resource.kind, budget, passed))
    }
  const { sync, finalize } = controller.hooks
  return { sync: served('sync', sync), ...(finalize === undefined ? {} : { finalize: served('finalize', finalize) }) }
}

/** What a controller's hooks read of its observed children (observed-fields.ts); undefined: every field. */
export function readFieldsOf (controller: Controller): ReadFields | undefined {
  return controller.type === 'composite' ? readFields(controller.childResources) : undefined
}

/** The hooks a controller has: `sync`, and `finalize` when it defines one. */
export function hookNames (controller: Controller): HookName[] {
  return definedHooks<unknown>(controller.hooks).map(([name]) => name)
}

/** The I/O that at least one of the controllers needs. */
export function needed (controllers: readonly Controller[]): Set<Need> {
  return new Set(controllers.flatMap((controller) => controller.needs))
}

/**
 * What a controller's hooks get as `io`: its `connect` called with the part of `available` it declared, or that part
 * itself. The server calls this once per controller and process. Fails (at start-up) when something it needs is
 * missing.
 */
export function ioFor (controller: Controller, available: Partial<Io>): object {
  const io: Partial<Io> = {}
  const needs: readonly Need[] = controller.needs
  for (const need of needs) {
    const provided = available[need]
    if (provided === undefined) throw new Error(`controller ${controller.name} needs ${need}, but none was configured`)
    io[need] = provided
  }
  return controller.connect === undefined ? io : controller.connect(io)
}

/**
 * The context of one hook call: the parent (`parent`, or a decorator's `object`) read for the controller's resource.
 * Outside the server (the render tool), repairs are counted nowhere.
 */
export function hookContext (controller: Controller, object: KubernetesObject, now: string, io: object, driftRepaired: (drift: Drift) => void = () => {}, arrivedAt = performance.now()): HookContext<any, any> {
  return { now, parent: readParent(controller.resource, object, controller.type === 'composite' ? 'parent' : 'object'), io, driftRepaired, arrivedAt }
}
