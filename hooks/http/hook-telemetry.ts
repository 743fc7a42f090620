import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { HookName } from '../controller.js'
import type { Metrics, Outcome } from '../metrics.js'
import { observedConditions } from '../wire/conditions.js'
import { objectKey } from '../wire/objects.js'
import type { CompositeResponse, Condition, DecoratorResponse, KubernetesObject } from '../wire/schemas.js'

/** One log line and one metric observation per hook call, whatever its answer. */

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
  }
}

function readyCondition (response: HookResponse | undefined): Condition | undefined {
  return observedConditions(response?.status).find((condition) => condition.type === 'Ready')
}

function outcomeOf (hook: HookName, statusCode: number, response: HookResponse | undefined): Outcome {
  if (statusCode === 304) return 'not_modified'
  if (statusCode >= 500) return 'error'
  if (statusCode >= 400) return 'rejected'
  if (response === undefined) return 'ok'
  // Metacontroller reads a missing `finalized` as false.
  if (hook === 'finalize') return response.finalized === true ? 'finalized' : 'pending'
  return readyCondition(response)?.status === 'False' ? 'not_ready' : 'ok'
}

/** The routes' `onResponse` hook. */
export function hookTelemetry (fastify: FastifyInstance, metrics: Metrics): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  // A request decoration rather than a WeakMap keyed by request: with a WeakMap, garbage collection took about a
  // quarter of the server's CPU per hook call (measured with bench/).
  fastify.decorateRequest('hookCall', null)

  return async (request, reply) => {
    const { controller, hook } = reply.routeOptions.config
    if (controller === undefined || hook === undefined) return
    const call = request.hookCall
    const response = call?.response
    const outcome = outcomeOf(hook, reply.statusCode, response)
    metrics.hookDuration.observe({ controller, hook, outcome }, reply.elapsedTime / 1000)
    // Why a Ready=False answer is not ready, as its status says: the log is where an operator looks first.
    const ready = outcome === 'not_ready' ? readyCondition(response) : undefined
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
  }
}
