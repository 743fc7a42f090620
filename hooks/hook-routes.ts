import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { BearerTokens, type BearerTokenSource } from './bearer-token.js'
import { definedHooks, hookContext, ioFor, type Controller, type HookContext, type HookName, type Io } from './controller.js'
import { HookError } from './errors.js'
import type { Metrics, Outcome } from './metrics.js'
import { kubernetesTime, observedConditions } from './wire/conditions.js'
import { objectKey } from './wire/objects.js'
import {
  CompositeRequestSchema, DecoratorRequestSchema,
  type CompositeResponse, type DecoratorResponse, type KubernetesObject
} from './wire/schemas.js'

export interface HookRoutesOptions {
  controllers: readonly Controller[]
  io: Partial<Io>
  metrics: Metrics
  clock: () => Date
  bearerTokens: BearerTokenSource | undefined
}

type HookResponse = CompositeResponse | DecoratorResponse

interface CallSummary {
  parent: KubernetesObject
  response?: HookResponse
}

declare module 'fastify' {
  interface FastifyContextConfig {
    controller?: string
    hook?: HookName
  }
  interface FastifyRequest {
    /** What the hook call's log line and metric need, set by the handler. */
    hookCall: CallSummary | null
  }
}

function outcomeOf (hook: HookName, statusCode: number, response: HookResponse | undefined): Outcome {
  if (statusCode >= 500) return 'error'
  if (statusCode >= 400) return 'rejected'
  if (response === undefined) return 'ok'
  // Metacontroller reads a missing `finalized` as false.
  if (hook === 'finalize') return response.finalized === true ? 'finalized' : 'pending'
  return observedConditions(response.status).some((c) => c.type === 'Ready' && c.status === 'False') ? 'not_ready' : 'ok'
}

/** `POST /<controller>/sync` and `/finalize` for every controller, with one log line and one metric per call. */
export const hookRoutes: FastifyPluginAsyncTypebox<HookRoutesOptions> = async (fastify, options) => {
  // A request decoration rather than a WeakMap keyed by request: with a WeakMap, garbage collection took about a
  // quarter of the server's CPU per hook call (measured with bench/).
  fastify.decorateRequest('hookCall', null)

  if (options.bearerTokens !== undefined) {
    const tokens = new BearerTokens(options.bearerTokens, fastify.log)
    tokens.start()
    fastify.addHook('onClose', async () => { tokens.stop() })
    fastify.addHook('onRequest', async (request, reply) => {
      if (!tokens.accepts(request.headers.authorization)) {
        reply.header('www-authenticate', 'Bearer')
        throw new HookError(401, `missing or wrong bearer token: send Authorization: Bearer <${tokens.expected}>`)
      }
    })
  }

  fastify.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const { controller, hook } = reply.routeOptions.config
    if (controller === undefined || hook === undefined) return
    const call = request.hookCall
    const outcome = outcomeOf(hook, reply.statusCode, call?.response)
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
      children: response === undefined ? undefined : 'children' in response ? response.children.length : response.attachments.length
    }, `${controller} ${hook} ${outcome}`)
  })

  /** Reads the parent, runs the hook, and keeps what the log line and the metric need. */
  const call = async <Response extends HookResponse>(
    request: FastifyRequest,
    controller: Controller,
    io: Partial<Io>,
    parent: KubernetesObject,
    run: (context: HookContext<any, any>) => Response | Promise<Response>
  ): Promise<Response> => {
    const summary: CallSummary = { parent }
    request.hookCall = summary
    const response = await run(hookContext(controller, parent, kubernetesTime(options.clock()), io))
    summary.response = response
    return response
  }

  for (const controller of options.controllers) {
    const io = ioFor(controller, options.io)
    if (controller.type === 'composite') {
      for (const [hook, run] of definedHooks(controller.hooks)) {
        fastify.post(`/${controller.name}/${hook}`, { schema: { body: CompositeRequestSchema }, config: { controller: controller.name, hook } }, async (request) =>
          await call(request, controller, io, request.body.parent, async (context) => await run(request.body, context)))
      }
    } else {
      for (const [hook, run] of definedHooks(controller.hooks)) {
        fastify.post(`/${controller.name}/${hook}`, { schema: { body: DecoratorRequestSchema }, config: { controller: controller.name, hook } }, async (request) =>
          await call(request, controller, io, request.body.object, async (context) => await run(request.body, context)))
      }
    }
  }
}
