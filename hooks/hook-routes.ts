import type { IncomingMessage } from 'node:http'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { BearerTokens, type BearerTokenSource } from './bearer-token.js'
import { definedHooks, hookContext, ioFor, servedHooks, type Controller, type HookContext, type HookName, type Io } from './controller.js'
import { HookError } from './errors.js'
import { answersFromRequestAlone, noneMatchHolds, requestDigest } from './etag.js'
import type { Metrics, Outcome } from './metrics.js'
import { BodyBudget, bodyLimits, bodyTooLarge, parseBody, receiveBody } from './request-body.js'
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
  /** HOOKS_BODY_LIMIT, in bytes. */
  bodyLimit: number
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
    /** The ETag of the request, on the hooks that carry them. */
    etag: string | null
  }
}

/** The body of a request whose If-None-Match holds its own ETag: never decoded, answered with 304. */
const NOT_MODIFIED = Symbol('not modified')

function outcomeOf (hook: HookName, statusCode: number, response: HookResponse | undefined): Outcome {
  if (statusCode === 304) return 'not_modified'
  if (statusCode >= 500) return 'error'
  if (statusCode >= 400) return 'rejected'
  if (response === undefined) return 'ok'
  // Metacontroller reads a missing `finalized` as false.
  if (hook === 'finalize') return response.finalized === true ? 'finalized' : 'pending'
  return observedConditions(response.status).some((c) => c.type === 'Ready' && c.status === 'False') ? 'not_ready' : 'ok'
}

function contentLength (request: FastifyRequest): number | undefined {
  const header = request.headers['content-length']
  return header === undefined ? undefined : Number(header)
}

/** `POST /<controller>/sync` and `/finalize` for every controller, with one log line and one metric per call. */
export const hookRoutes: FastifyPluginAsyncTypebox<HookRoutesOptions> = async (fastify, options) => {
  // A request decoration rather than a WeakMap keyed by request: with a WeakMap, garbage collection took about a
  // quarter of the server's CPU per hook call (measured with bench/).
  fastify.decorateRequest('hookCall', null)
  fastify.decorateRequest('etag', null)

  const limits = bodyLimits(options.bodyLimit)
  // One body of the largest size at a time, or several smaller ones (see BodyBudget).
  const budget = new BodyBudget(options.bodyLimit)
  const digests = new Map(options.controllers.filter(answersFromRequestAlone).flatMap((controller) =>
    definedHooks<unknown>(controller.hooks).map(([hook]) => [`/${controller.name}/${hook}`, requestDigest(controller, hook)])))

  /**
   * A body is read only once admitted into the budget, and gives its bytes back when its answer is done or its
   * connection closes, whichever comes first (the response's `close` event covers both).
   */
  const admitBody = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const length = contentLength(request)
    if (length !== undefined && length > limits.bytes) throw bodyTooLarge(limits.bytes)
    const ticket = budget.ticket(length ?? limits.bytes)
    reply.raw.once('close', ticket.release)
    await ticket.admitted
  }

  // Fastify's own JSON parser would collect, decode and scan every body before the route could answer a 304.
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', async (request: FastifyRequest, payload: IncomingMessage) => {
    const digest = digests.get(request.routeOptions.url ?? '')?.()
    const body = await receiveBody(payload, limits, contentLength(request), digest)
    if (digest !== undefined) {
      request.etag = digest.etag()
      if (noneMatchHolds(request.headers['if-none-match'], request.etag)) return NOT_MODIFIED
    }
    return parseBody(body, limits)
  })

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
    // Why a Ready=False answer is not ready, as its status says: the log is where an operator looks first.
    const ready = outcome === 'not_ready' ? observedConditions(response?.status).find((c) => c.type === 'Ready') : undefined
    request.log.info({
      controller,
      hook,
      parent: call === null ? undefined : objectKey(call.parent),
      generation: call?.parent.metadata.generation,
      outcome,
      reason: ready?.reason,
      message: ready?.message,
      statusCode: reply.statusCode,
      // A 304's body is never parsed: its ETag ties it to the answer, logged with its parent, that first carried it.
      etag: request.etag ?? undefined,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      children: response === undefined ? undefined : 'children' in response ? response.children.length : response.attachments.length
    }, `${controller} ${hook} ${outcome}`)
  })

  /** Answers a request whose If-None-Match holds its ETag with 304, before the body is validated. */
  const notModified = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (request.body === NOT_MODIFIED) await reply.code(304).header('etag', request.etag).send()
  }

  /** Reads the parent, runs the hook, and keeps what the log line and the metric need; an answer carries its ETag. */
  const call = async <Response extends HookResponse>(
    request: FastifyRequest,
    reply: FastifyReply,
    controller: Controller,
    io: Partial<Io>,
    parent: KubernetesObject,
    run: (context: HookContext<any, any>) => Response | Promise<Response>
  ): Promise<Response> => {
    const summary: CallSummary = { parent }
    request.hookCall = summary
    const response = await run(hookContext(controller, parent, kubernetesTime(options.clock()), io))
    summary.response = response
    if (request.etag !== null) reply.header('etag', request.etag)
    return response
  }

  for (const controller of options.controllers) {
    const io = ioFor(controller, options.io)
    // Only requests that can carry their own ETag can be answered 304.
    const route = (hook: HookName) => ({
      config: { controller: controller.name, hook },
      preParsing: admitBody,
      ...(answersFromRequestAlone(controller) ? { preValidation: notModified } : {})
    })
    if (controller.type === 'composite') {
      for (const [hook, run] of definedHooks(servedHooks(controller))) {
        fastify.post(`/${controller.name}/${hook}`, { ...route(hook), schema: { body: CompositeRequestSchema } }, async (request, reply) =>
          await call(request, reply, controller, io, request.body.parent, async (context) => await run(request.body, context)))
      }
    } else {
      for (const [hook, run] of definedHooks(servedHooks(controller))) {
        fastify.post(`/${controller.name}/${hook}`, { ...route(hook), schema: { body: DecoratorRequestSchema } }, async (request, reply) =>
          await call(request, reply, controller, io, request.body.object, async (context) => await run(request.body, context)))
      }
    }
  }
}
