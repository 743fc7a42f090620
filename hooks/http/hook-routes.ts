import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BearerTokenSource } from './bearer-token.js'
import { answerWeight, definedHooks, hookContext, ioFor, readFieldsOf, servedHooks, type Controller, type Drift, type HookContext, type HookName, type Io } from '../framework/controller.js'
import { answersFromRequestAlone, requestDigest } from './etag.js'
import type { Metrics } from './metrics.js'
import { bodyLimits, unreadFields } from './request-body.js'
import { kubernetesTime } from '../framework/wire/conditions.js'
import { CompositeRequestSchemas, DecoratorRequestSchemas, type KubernetesObject } from '../framework/wire/schemas.js'
import { bearerAuth } from './bearer-auth.js'
import { callAdmission, type AdmissionClock } from './call-admission.js'
import { hookTelemetry, type CallSummary, type HookResponse } from './hook-telemetry.js'
import { answerNotModified } from './not-modified.js'

export interface HookRoutesOptions {
  controllers: readonly Controller[]
  io: Partial<Io>
  metrics: Metrics
  clock: () => Date
  bearerTokens: BearerTokenSource | undefined
  /** HOOKS_BODY_LIMIT, in bytes. */
  bodyLimit: number
  /** HOOKS_BODY_TIMEOUT. */
  bodyTimeoutMs: number
  /** HOOKS_ADMISSION_TIMEOUT. */
  admissionTimeoutMs: number
  /** The admission's clock; the process's by default. */
  admissionClock?: AdmissionClock
}

/**
 * `POST /<controller>/sync` and `/finalize` for every controller. A request meets, in order: the bearer token
 * (bearer-auth.ts), its body read into memory and digested (body-reading.ts, body-admission.ts), the 304 for an
 * unchanged request (not-modified.ts), its turn to be parsed (body-admission.ts), the JSON parser (request-body.ts),
 * the hook's request schema (wire/schemas.ts), then the handler here: the parent read (parent.ts) and the controller's
 * hook run. Its answer is logged and counted (hook-telemetry.ts).
 */
export const hookRoutes: FastifyPluginAsyncTypebox<HookRoutesOptions> = async (fastify, options) => {
  const limits = bodyLimits(options.bodyLimit)
  const authenticate = bearerAuth(fastify, options.bearerTokens)
  const telemetry = hookTelemetry(fastify, options.metrics)
  const { readBody, awaitParseTurn, awaitAnswerTurn, cpuTurn } = callAdmission(fastify, {
    bounds: { limit: options.bodyLimit, bodyTimeoutMs: options.bodyTimeoutMs, admissionTimeoutMs: options.admissionTimeoutMs },
    limits,
    clientGone: telemetry.clientGone,
    answerDropped: telemetry.answerDropped,
    refusalClosed: (request, reply) => { void telemetry.logCall(request, reply) },
    clock: options.admissionClock
  })

  /**
   * Reads the parent, runs the hook once its answer may be built, and keeps what the log line and the metric need; an
   * answer carries its ETag, and is sent in its turn of the CPU.
   */
  const call = async <Response extends HookResponse>(
    request: FastifyRequest,
    reply: FastifyReply,
    controller: Controller,
    io: object,
    parent: KubernetesObject,
    run: (context: HookContext<any, any>, inFull: (() => any) | undefined) => Response | Promise<Response>
  ): Promise<Response | FastifyReply> => {
    const summary: CallSummary = { parent }
    request.hookCall = summary
    const driftRepaired = (drift: Drift): void => { options.metrics.driftRepairs.inc({ controller: controller.name, drift }) }
    const arrivedAt = performance.now() - reply.elapsedTime
    const context = hookContext(controller, parent, kubernetesTime(options.clock()), io, driftRepaired, arrivedAt)
    const weight = answerWeight(controller, context.parent, request.admission?.received ?? 0)
    let response: Response
    try {
      if (!await awaitAnswerTurn(request, reply, weight)) return reply
      response = await run(context, request.inFull ?? undefined)
    } finally {
      // The body's chunks go with it: admission takes their memory as given back once the answer is built.
      request.inFull = null
    }
    summary.response = response
    if (request.etag !== null) reply.header('etag', request.etag)
    await cpuTurn(weight)
    return response
  }

  for (const controller of options.controllers) {
    const io = ioFor(controller, options.io)
    // Only requests that can carry their own ETag can be answered 304.
    const etags = answersFromRequestAlone(controller)
    const fields = readFieldsOf(controller)
    const unread = fields === undefined ? undefined : unreadFields(fields)
    const route = (hook: HookName) => ({
      config: { controller: controller.name, hook },
      ...(authenticate === undefined ? {} : { onRequest: authenticate }),
      preParsing: etags
        ? [readBody(requestDigest(controller, hook, options.bodyLimit), unread), answerNotModified, awaitParseTurn]
        : [readBody(undefined, unread), awaitParseTurn],
      onResponse: telemetry.logCall
    })
    if (controller.type === 'composite') {
      for (const [hook, run] of definedHooks(servedHooks(controller, options.bodyLimit))) {
        fastify.post(`/${controller.name}/${hook}`, { ...route(hook), schema: { body: CompositeRequestSchemas[hook] } }, async (request, reply) =>
          await call(request, reply, controller, io, request.body.parent, async (context, inFull) => await run(request.body, context, inFull)))
      }
    } else {
      for (const [hook, run] of definedHooks(servedHooks(controller, options.bodyLimit))) {
        fastify.post(`/${controller.name}/${hook}`, { ...route(hook), schema: { body: DecoratorRequestSchemas[hook] } }, async (request, reply) =>
          await call(request, reply, controller, io, request.body.object, async (context, inFull) => await run(request.body, context, inFull)))
      }
    }
  }
}
