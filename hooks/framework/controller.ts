import type { CustomResource } from './custom-resource.js'
import { answerBudget, answerPassing, answerTooLarge } from './answer-budget.js'
import { UnservableSpecError } from './errors.js'
import { compositeInvalidSpecAnswer, decoratorInvalidSpecAnswer } from './invalid-spec.js'
import { readFields, withReadFieldsOnly, type ReadFields } from './observed-fields.js'
import { readParent, type ParentOf } from './parent.js'
import type { ControllerSettings } from './settings.js'
import type { CompositeRequest, CompositeResponse, DecoratorRequest, DecoratorResponse, KubernetesObject } from './wire/schemas.js'

/**
 * The contract of a controller: what it has (a resource, hooks, child kinds) and the I/O it declares. Routes,
 * manifests, the render tool and the e2e install are all derived from it.
 */

/**
 * Every kind of I/O a controller can declare in `needs`, by name. The server connects each once per process, and hands
 * a controller only what it declared. What each one is, its provider says (PostgreSQL: hooks/database/index.ts), and
 * a controller that declares it names its type (`Given`): the framework hands it over without looking into it.
 */
export type Need = 'postgres'
export type Io = Record<Need, unknown>

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

interface ControllerBase<R extends CustomResource, Given extends Partial<Io>, I extends object, S> {
  /** The URL segment and the Metacontroller controller's name. */
  name: string
  resource: R
  /** The I/O its hooks use, the names of `Given`: `[]` for none. */
  needs: ReadonlyArray<keyof Given & Need>
  /**
   * Its own settings: environment variables read and documented with the server's (hooks/runtime/config-schema.ts),
   * whose values its `connect` gets.
   */
  settings?: ControllerSettings<S>
  /**
   * Builds what its hooks get as `io` from the I/O it declared and its settings. The server calls it once per process,
   * when it sets up the controller's routes, so that what lasts across calls (a store that remembers the tables it
   * found fit) belongs to the server that made it, not to a module. Without it, the hooks get the declared I/O itself.
   */
  connect?: (given: Given, settings: S) => I
  /**
   * The bytes its answer to `parent` may take, when a small request can ask for a far larger answer (a PodSet's pods):
   * the server sets that much memory aside before it builds the answer, and lets lighter calls go first. Without it,
   * an answer is taken to be about as large as its request.
   */
  answerBytes? (parent: ParentOf<R>): number
  resyncPeriodSeconds?: number
}

export interface CompositeController<R extends CustomResource = CustomResource, Given extends Partial<Io> = NoIo, I extends object = Given, S = undefined> extends ControllerBase<R, Given, I, S> {
  type: 'composite'
  childResources: ChildResource[]
  hooks: Hooks<CompositeRequest, CompositeResponse, HookContext<R, I>>
}

export interface DecoratorController<R extends CustomResource = CustomResource, Given extends Partial<Io> = NoIo, I extends object = Given, S = undefined> extends ControllerBase<R, Given, I, S> {
  type: 'decorator'
  hooks: Hooks<DecoratorRequest, DecoratorResponse, HookContext<R, I>>
}

/** Any controller, whatever its resource and needs: what the registry and the code derived from it hold. */
export type Controller = CompositeController<any, any, any, any> | DecoratorController<any, any, any, any>

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
 * `controller` as the server runs it: its own settings read from `settings` (every variable's value, as the
 * configuration read them), so that its `connect` takes the I/O alone. A controller without settings is itself.
 */
export function configure<C extends Controller> (controller: C, settings: Readonly<Record<string, unknown>>): C {
  const { settings: own, connect, ...rest } = controller
  if (own === undefined) return controller
  const read: unknown = own.read(settings)
  return { ...rest, ...(connect === undefined ? {} : { connect: (given: object) => connect(given, read) }) } as unknown as C
}

/**
 * What a controller's hooks get as `io`: its `connect` called with the part of `available` it declared, or that part
 * itself. The server calls this once per controller and process, on the controller `configure` gave. Fails (at
 * start-up) when something it needs is missing.
 */
export function ioFor (controller: Controller, available: Partial<Io>): object {
  if (controller.settings !== undefined) throw new Error(`controller ${controller.name} has settings of its own: configure it with the server's configuration first`)
  const io: Partial<Io> = {}
  const needs: readonly Need[] = controller.needs
  for (const need of needs) {
    const provided = available[need]
    if (provided === undefined) throw new Error(`controller ${controller.name} needs ${need}, but none was configured`)
    io[need] = provided
  }
  return controller.connect === undefined ? io : controller.connect(io, undefined)
}

/**
 * What building the answer to `parent` weighs, in bytes: what its controller says the answer may take, and at least
 * the request's own `requestBytes`. A spec the hook cannot use is answered on the resource, from the request.
 */
export function answerWeight (controller: Controller, parent: ParentOf<any>, requestBytes: number): number {
  if (controller.answerBytes === undefined) return requestBytes
  try {
    return Math.max(requestBytes, controller.answerBytes(parent))
  } catch (error) {
    if (error instanceof UnservableSpecError) return requestBytes
    throw error
  }
}

/**
 * The context of one hook call: the parent (`parent`, or a decorator's `object`) read for the controller's resource.
 * Outside the server (the render tool), repairs are counted nowhere.
 */
export function hookContext (controller: Controller, object: KubernetesObject, now: string, io: object, driftRepaired: (drift: Drift) => void = () => {}, arrivedAt = performance.now()): HookContext<any, any> {
  return { now, parent: readParent(controller.resource, object, controller.type === 'composite' ? 'parent' : 'object'), io, driftRepaired, arrivedAt }
}
