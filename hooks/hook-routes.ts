import { timingSafeEqual, createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Controller, Dependencies, HookContext } from './controller.js'
import { HookError } from './errors.js'
import type { Metrics, Outcome } from './metrics.js'
import { kubernetesTime } from './wire/conditions.js'
import { objectKey } from './wire/objects.js'
import {
  CompositeRequestSchema, DecoratorRequestSchema,
  type CompositeRequest, type DecoratorRequest, type KubernetesObject
} from './wire/schemas.js'

export interface HookRoutesOptions {
  controllers: readonly Controller[]
  dependencies: Dependencies
  metrics: Metrics
  clock: () => Date
  bearerToken: string | undefined
}

interface HookResponse {
  status?: unknown
  children?: unknown[]
  attachments?: unknown[]
  finalized?: boolean
}

interface CallSummary {
  parent: KubernetesObject
  response?: HookResponse
}

declare module 'fastify' {
  interface FastifyContextConfig {
    controller?: string
    hook?: 'sync' | 'finalize'
  }
  interface FastifyRequest {
    /** What the hook call's log line and metric need, set by the handler. */
    hookCall: CallSummary | null
  }
}

/** Answered with Ready=False, or finalize not done yet. */
function notReady (response: HookResponse): boolean {
  if (response.finalized === false) return true
  const conditions = (response.status as { conditions?: Array<{ type?: string, status?: string }> } | null | undefined)?.conditions
  return Array.isArray(conditions) && conditions.some((c) => c.type === 'Ready' && c.status === 'False')
}

function outcomeOf (statusCode: number, response: HookResponse | undefined): Outcome {
  if (statusCode >= 500) return 'error'
  if (statusCode >= 400) return 'rejected'
  return response !== undefined && notReady(response) ? 'not_ready' : 'ok'
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest()

/** `POST /<controller>/sync` and `/finalize` for every controller, with one log line and one metric per call. */
export async function hookRoutes (fastify: FastifyInstance, options: HookRoutesOptions): Promise<void> {
  // A request decoration rather than a WeakMap keyed by request: with a WeakMap, garbage collection took about a
  // quarter of the server's CPU per hook call (measured with bench/).
  fastify.decorateRequest('hookCall', null)

  if (options.bearerToken !== undefined) {
    const expected = digest(`Bearer ${options.bearerToken}`)
    fastify.addHook('onRequest', async (request, reply) => {
      // Hashing both sides gives equal lengths, so the comparison takes the same time whatever was sent.
      if (!timingSafeEqual(digest(request.headers.authorization ?? ''), expected)) {
        reply.header('www-authenticate', 'Bearer')
        throw new HookError(401, 'missing or wrong bearer token: send Authorization: Bearer <HOOKS_BEARER_TOKEN>')
      }
    })
  }

  fastify.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const { controller, hook } = reply.routeOptions.config
    if (controller === undefined || hook === undefined) return
    const call = request.hookCall
    const outcome = outcomeOf(reply.statusCode, call?.response)
    options.metrics.hookDuration.observe({ controller, hook, outcome }, reply.elapsedTime / 1000)
    const response = call?.response
    request.log.info({
      controller,
      hook,
      parent: call === null ? undefined : objectKey(call.parent),
      generation: call?.parent.metadata.generation,
      outcome,
      statusCode: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      children: (response?.children ?? response?.attachments)?.length
    }, `${controller} ${hook} ${outcome}`)
  })

  const route = <Request extends CompositeRequest | DecoratorRequest>(
    controller: string,
    hook: 'sync' | 'finalize',
    schema: typeof CompositeRequestSchema | typeof DecoratorRequestSchema,
    parentOf: (request: Request) => KubernetesObject,
    handler: (request: Request, context: HookContext) => HookResponse | Promise<HookResponse>
  ): void => {
    fastify.post(`/${controller}/${hook}`, { schema: { body: schema }, config: { controller, hook } }, async (request) => {
      const body = request.body as Request
      const call: CallSummary = { parent: parentOf(body) }
      request.hookCall = call
      call.response = await handler(body, { now: kubernetesTime(options.clock()), log: request.log })
      return call.response
    })
  }

  for (const controller of options.controllers) {
    if (controller.type === 'composite') {
      const hooks = controller.hooks(options.dependencies)
      route<CompositeRequest>(controller.name, 'sync', CompositeRequestSchema, (r) => r.parent, hooks.sync)
      if (hooks.finalize !== undefined) route<CompositeRequest>(controller.name, 'finalize', CompositeRequestSchema, (r) => r.parent, hooks.finalize)
    } else {
      const hooks = controller.hooks(options.dependencies)
      route<DecoratorRequest>(controller.name, 'sync', DecoratorRequestSchema, (r) => r.object, hooks.sync)
      if (hooks.finalize !== undefined) route<DecoratorRequest>(controller.name, 'finalize', DecoratorRequestSchema, (r) => r.object, hooks.finalize)
    }
  }
}
