import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { HookName } from '../framework/controller.js'
import type { Metrics, Outcome } from './metrics.js'
import { observedConditions } from '../framework/wire/conditions.js'
import { objectKey } from '../framework/wire/objects.js'
import type { CompositeResponse, Condition, DecoratorResponse, KubernetesObject } from '../framework/wire/schemas.js'
import type { ClientGone } from './body-reading.js'

/** One log line and one metric observation per hook call, whatever its answer, and for a client that went away. */

export type HookResponse = CompositeResponse | DecoratorResponse

/** What the log line and the metric need of a call that reached its controller. */
export interface CallSummary {
  parent: KubernetesObject
  response?: HookResponse
}

declare module 'fastify' {
  interface FastifyContextConfig {
    controller?: string
    hook?: HookName
  }
  interface FastifyRequest {
    /** Set by the route's handler. */
    hookCall: CallSummary | null
    /** Why the call was refused (4xx), set by the error handler: the call's log line says it. */
    refusal: string | null
  }
}

function readyCondition (response: HookResponse | undefined): Condition | undefined {
  return observedConditions(response?.status).find((condition) => condition.type === 'Ready')
}

function outcomeOf (hook: HookName, statusCode: number, response: HookResponse | undefined): Outcome {
  if (statusCode === 304) return 'not_modified'
  if (statusCode === 503) return 'overloaded'
  if (statusCode >= 500) return 'error'
  if (statusCode >= 400) return 'rejected'
  if (response === undefined) return 'ok'
  // Metacontroller reads a missing `finalized` as false.
  if (hook === 'finalize') return response.finalized === true ? 'finalized' : 'pending'
  return readyCondition(response)?.status === 'False' ? 'not_ready' : 'ok'
}

export interface HookTelemetry {
  /** The route's `onResponse` hook. */
  logCall: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  /** A client that closed its connection before its body arrived or was parsed: said once, at info, and counted. */
  clientGone: (request: FastifyRequest, reply: FastifyReply, error: ClientGone) => void
  /** An answer whose connection was closed before its client took it: said once, at info, and counted as aborted. */
  answerDropped: (request: FastifyRequest, reply: FastifyReply, reason: string) => void
}

export function hookTelemetry (fastify: FastifyInstance, metrics: Metrics): HookTelemetry {
  // A request decoration rather than a WeakMap keyed by request: with a WeakMap, garbage collection took about a
  // quarter of the server's CPU per hook call (measured with bench/).
  fastify.decorateRequest('hookCall', null)
  fastify.decorateRequest('refusal', null)

  /** Counts the call in the metric; its duration, for the log line. */
  const observe = (controller: string, hook: HookName, outcome: Outcome, reply: FastifyReply): number => {
    metrics.hookDuration.observe({ controller, hook, outcome }, reply.elapsedTime / 1000)
    return Math.round(reply.elapsedTime * 100) / 100
  }

  /** The Ready condition of a 200, or the status code of a refusal (4xx, 503), in their counters. */
  const countAnswer = (controller: string, hook: HookName, statusCode: number, response: HookResponse | undefined): void => {
    const ready = statusCode === 200 ? readyCondition(response) : undefined
    if (ready !== undefined) metrics.answers.inc({ controller, hook, ready: ready.status, reason: ready.reason })
    if ((statusCode >= 400 && statusCode < 500) || statusCode === 503) metrics.refusals.inc({ controller, hook, code: statusCode })
  }

  return {
    logCall: async (request, reply) => {
      const { controller, hook } = reply.routeOptions.config
      if (controller === undefined || hook === undefined) return
      const call = request.hookCall
      const response = call?.response
      const outcome = outcomeOf(hook, reply.statusCode, response)
      const durationMs = observe(controller, hook, outcome, reply)
      countAnswer(controller, hook, reply.statusCode, response)
      // Why a Ready=False answer is not ready, as its status says: the log is where an operator looks first.
      const ready = outcome === 'not_ready' ? readyCondition(response) : undefined
      request.log.info({
        controller,
        hook,
        parent: typeof call?.parent.metadata.name === 'string' ? objectKey(call.parent) : undefined,
        generation: call?.parent.metadata.generation,
        outcome,
        reason: ready?.reason ?? request.refusal ?? undefined,
        message: ready?.message,
        statusCode: reply.statusCode,
        // A 304's body is never parsed: its ETag ties it to the answer, logged with its parent, that first carried it.
        etag: request.etag ?? undefined,
        durationMs,
        children: response === undefined ? undefined : 'children' in response ? response.children.length : response.attachments.length
      }, `${controller} ${hook} ${outcome}`)
    },
    clientGone: (request, reply, error) => {
      // Nobody is left to answer: the rest of the request's steps are skipped.
      reply.hijack()
      const { controller, hook } = reply.routeOptions.config
      if (controller === undefined || hook === undefined) return
      const durationMs = observe(controller, hook, 'aborted', reply)
      request.log.info({ controller, hook, outcome: 'aborted', bytesReceived: request.admission?.received, durationMs }, `${controller} ${hook} aborted: ${error.message}`)
    },
    answerDropped: (request, reply, reason) => {
      const { controller, hook } = reply.routeOptions.config
      if (controller === undefined || hook === undefined) return
      const durationMs = observe(controller, hook, 'aborted', reply)
      request.log.info({ controller, hook, outcome: 'aborted', statusCode: reply.statusCode, durationMs }, `${controller} ${hook} aborted: its connection was closed, its answer not taken: ${reason}`)
    }
  }
}
