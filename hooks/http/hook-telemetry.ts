import type { FastifyReply, FastifyRequest } from 'fastify'
import type { HookName } from '../framework/controller.js'
import type { Metrics, Outcome } from './metrics.js'
import { observedConditions } from '../framework/wire/conditions.js'
import { objectKey } from '../framework/wire/objects.js'
import type { CompositeResponse, Condition, DecoratorResponse, KubernetesObject } from '../framework/wire/schemas.js'
import type { ClientGone } from './body-reading.js'

/** One log line and one metric observation per hook call, whatever its answer, and for a client that went away. */

export type HookResponse = CompositeResponse | DecoratorResponse

/** What a call's log line and metric say of it (hook-call.ts's HookCall). */
export interface CallFacts {
  controller: string
  hook: HookName
  request: FastifyRequest
  reply: FastifyReply
  /** Body bytes received. */
  received: number
  /** The parent its hook was called for, and its answer, once they are known. */
  parent?: KubernetesObject
  response?: HookResponse
  /** Why it was refused, as its error answer says. */
  refusal?: string
  etag?: string
}

function readyCondition (response: HookResponse | undefined): Condition | undefined {
  return observedConditions(response?.status).find((condition) => condition.type === 'Ready')
}

/** `ready`: the answer's Ready condition. */
function outcomeOf (hook: HookName, statusCode: number, response: HookResponse | undefined, ready: Condition | undefined): Outcome {
  if (statusCode === 304) return 'not_modified'
  if (statusCode === 503) return 'overloaded'
  if (statusCode >= 500) return 'error'
  if (statusCode >= 400) return 'rejected'
  if (response === undefined) return 'ok'
  // Metacontroller reads a missing `finalized` as false.
  if (hook === 'finalize') return response.finalized === true ? 'finalized' : 'pending'
  return ready?.status === 'False' ? 'not_ready' : 'ok'
}

export interface HookTelemetry {
  /** The call's line and observation, once its answer is sent. */
  logCall: (call: CallFacts) => void
  /** A client that closed its connection before its body arrived or was parsed: said once, at info, and counted. */
  clientGone: (call: CallFacts, error: ClientGone) => void
  /** An answer whose connection was closed before its client took it: said once, at info, and counted as aborted. */
  answerDropped: (call: CallFacts, reason: string) => void
}

export function hookTelemetry (metrics: Metrics): HookTelemetry {
  /** Counts the call in the metric; its duration, for the log line. */
  const observe = ({ controller, hook, reply }: CallFacts, outcome: Outcome): number => {
    metrics.hookDuration.observe({ controller, hook, outcome }, reply.elapsedTime / 1000)
    return Math.round(reply.elapsedTime * 100) / 100
  }

  /** The Ready condition of a 200, or the status code of a refusal (4xx, 503), in their counters. */
  const countAnswer = (controller: string, hook: HookName, statusCode: number, ready: Condition | undefined): void => {
    if (statusCode === 200 && ready !== undefined) metrics.answers.inc({ controller, hook, ready: ready.status, reason: ready.reason })
    if ((statusCode >= 400 && statusCode < 500) || statusCode === 503) metrics.refusals.inc({ controller, hook, code: statusCode })
  }

  return {
    logCall: (call) => {
      const { controller, hook, reply, response, parent } = call
      const ready = readyCondition(response)
      const outcome = outcomeOf(hook, reply.statusCode, response, ready)
      const durationMs = observe(call, outcome)
      countAnswer(controller, hook, reply.statusCode, ready)
      // Why a Ready=False answer is not ready, as its status says: the log is where an operator looks first.
      const notReady = outcome === 'not_ready' ? ready : undefined
      call.request.log.info({
        controller,
        hook,
        parent: typeof parent?.metadata.name === 'string' ? objectKey(parent) : undefined,
        generation: parent?.metadata.generation,
        outcome,
        reason: notReady?.reason ?? call.refusal,
        message: notReady?.message,
        statusCode: reply.statusCode,
        // A 304's body is never parsed: its ETag ties it to the answer, logged with its parent, that first carried it.
        etag: call.etag,
        durationMs,
        children: response === undefined ? undefined : 'children' in response ? response.children.length : response.attachments.length
      }, `${controller} ${hook} ${outcome}`)
    },
    clientGone: (call, error) => {
      // Nobody is left to answer: the rest of the request's steps are skipped.
      call.reply.hijack()
      const { controller, hook } = call
      const durationMs = observe(call, 'aborted')
      call.request.log.info({ controller, hook, outcome: 'aborted', bytesReceived: call.received, durationMs }, `${controller} ${hook} aborted: ${error.message}`)
    },
    answerDropped: (call, reason) => {
      const { controller, hook } = call
      const durationMs = observe(call, 'aborted')
      call.request.log.info({ controller, hook, outcome: 'aborted', statusCode: call.reply.statusCode, durationMs }, `${controller} ${hook} aborted: its connection was closed, its answer not taken: ${reason}`)
    }
  }
}
