import type { CustomResource } from './custom-resource.js'
import type { FastifyBaseLogger } from 'fastify'
import type pg from 'pg'
import type { PostgresPolicy } from './config.js'
import type { CompositeRequest, CompositeResponse, DecoratorRequest, DecoratorResponse } from './wire/schemas.js'

/** What a hook sees besides its request: the time to stamp on new conditions, and a logger. */
export interface HookContext {
  now: string
  log: FastifyBaseLogger
}

/** What the hooks may use for I/O; composites use none of it. */
export interface Dependencies {
  pool: pg.Pool | undefined
  policy: PostgresPolicy
  /** Where the pool points, without the password: for messages. */
  databaseDescription: string
}

export interface ChildResource {
  apiVersion: string
  resource: string
  updateStrategy: 'InPlace' | 'OnDelete' | 'Recreate'
}

type Hook<Request, Response> = (request: Request, context: HookContext) => Response | Promise<Response>

export interface CompositeHooks {
  sync: Hook<CompositeRequest, CompositeResponse>
  finalize?: Hook<CompositeRequest, CompositeResponse>
}

export interface DecoratorHooks {
  sync: Hook<DecoratorRequest, DecoratorResponse>
  finalize?: Hook<DecoratorRequest, DecoratorResponse>
}

interface ControllerBase {
  /** The URL segment and the Metacontroller controller's name. */
  name: string
  resource: CustomResource
  /** Whether Metacontroller should call a finalize hook (and so hold a finalizer on every parent). */
  hasFinalize: boolean
  resyncPeriodSeconds?: number
}

export interface CompositeController extends ControllerBase {
  type: 'composite'
  childResources: ChildResource[]
  hooks: (dependencies: Dependencies) => CompositeHooks
}

export interface DecoratorController extends ControllerBase {
  type: 'decorator'
  hooks: (dependencies: Dependencies) => DecoratorHooks
}

export type Controller = CompositeController | DecoratorController
