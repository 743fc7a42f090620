import { Readable } from 'node:stream'
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest, type RouteShorthandOptions } from 'fastify'
import { answerWeight, hookContext, ioFor, readFieldsOf, type Controller, type Drift, type HookName, type Io, type ServedHook } from '../framework/controller.js'
import { HookError } from '../framework/errors.js'
import { kubernetesTime } from '../framework/wire/conditions.js'
import { CompositeRequestSchemas, DecoratorRequestSchemas, type CompositeRequest, type DecoratorRequest, type ErrorResponse, type KubernetesObject } from '../framework/wire/schemas.js'
import { bearerAuth } from './bearer-auth.js'
import type { BearerTokenSource } from './bearer-token.js'
import { BodyAdmission, Call, RETRY_AFTER_SECONDS, TICK_MS, type Effect, type SchedulerClock } from './body-admission.js'
import { ClientGone, isJson, receiveBody, type BodyGate } from './body-reading.js'
import { CpuTurns } from './cpu-turns.js'
import { answersFromRequestAlone, noneMatchHolds, requestTag, type RequestTag } from './etag.js'
import { hookTelemetry, type HookResponse } from './hook-telemetry.js'
import type { Metrics } from './metrics.js'
import { bodyLimits, bodyTooLarge, parseBody, scannedFirst, unreadFields, type ReceivedBody, type UnreadFields } from './request-body.js'
import { makeYoungRoom } from './young-generation.js'

/**
 * One hook call, from its socket to its answer: the `HookCall` that each request of a hook route carries, and
 * `hookCalls`, which takes it through its steps, in this order:
 *
 * 1. `onRequest`: the call is made, and the bearer token checked (bearer-auth.ts).
 * 2. `preParsing`: its body read into memory as the admission scheduler lets it (body-reading.ts, body-admission.ts),
 *    then tagged with its ETag (etag.ts); the 304 of a request whose If-None-Match holds that ETag; its turn to be parsed.
 * 3. The JSON parser: room made in V8's young generation for what the call will make (young-generation.ts); the body
 *    parsed (request-body.ts), without the fields of observed children that no hook reads when it is large; then
 *    fastify checks the hook's request schema (wire/schemas.ts).
 * 4. The handler: memory set aside for its answer, and its turn of the CPU; the controller's hook run; its ETag.
 * 5. `onSend`: its answer handed over, in slices counted as the client takes them.
 * 6. `onResponse`: its log line and metric (hook-telemetry.ts).
 *
 * A call refused on the way gets its answer from the app's error handler, and its log line all the same.
 */

interface Turn { resolve: () => void, reject: (error: Error) => void }

/** A hook request's call: what its steps learned of it, and what carries out the scheduler's decisions about it. */
export class HookCall extends Call {
  /** The body's reader, while it reads or waits to. */
  reader: { go: () => void, stop: (error: Error) => void } | undefined
  /** The wait for a turn to parse. */
  parseTurn: Turn | undefined
  /** The wait for memory to build its answer. */
  answerTurn: Turn | undefined
  /** Its body is being read, or was: the scheduler knows it until it ends. */
  admitted = false
  /** Its body did not arrive whole: its connection closes after the answer. */
  cutShort = false
  /** The body as received, until the JSON parser takes it. */
  body: ReceivedBody | undefined
  /** The request's ETag, on the hooks that carry them. */
  etag: string | undefined
  /** The body parsed in full, when the parse left out fields of observed children that no hook reads; until the hook has answered. */
  inFull: (() => unknown) | undefined
  /** The parent the hook was called for, and its answer. */
  parent: KubernetesObject | undefined
  response: HookResponse | undefined
  /** Why it was refused, as its error answer says. */
  refusal: string | undefined

  /** `unread`: the fields of observed children that no hook of its controller reads. */
  constructor (readonly controller: string, readonly hook: HookName, readonly unread: UnreadFields | undefined, readonly request: FastifyRequest, readonly reply: FastifyReply) {
    const header = request.headers['content-length']
    super(header === undefined ? undefined : Number(header))
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    controller?: string
    hook?: HookName
  }
  interface FastifyRequest {
    /**
     * The request's call, on a hook route. A decoration rather than a WeakMap keyed by request: with a WeakMap,
     * garbage collection took about a quarter of the server's CPU per hook call.
     */
    call: HookCall | null
  }
}

/** Answers larger than this are sent in slices of this size, each counted as taken once the socket has taken it. */
export const SLICE_BYTES = 64 * 1024

/** How long a connection whose body was cut short stays open after its answer: see `lingering`. */
export const LINGER_MS = 1000

/** What the scheduler's time comes from, and a way to run something every so many milliseconds. */
export interface AdmissionClock extends SchedulerClock {
  /** Runs `run` every `ms` until the returned function is called. */
  every: (ms: number, run: () => void) => () => void
}

/** The process's clock; its idle time is the event loop's (time spent waiting for I/O). */
export const processClock: AdmissionClock = {
  now: () => performance.now(),
  idle: () => performance.nodeTiming.idleTime,
  every: (ms, run) => {
    const timer = setInterval(run, ms).unref()
    return () => { clearInterval(timer) }
  }
}

export interface HookCallOptions {
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

/** A controller's hook as a call runs it: the hook's own request type, erased. */
type AnyServedHook = ServedHook<any, HookResponse>

export interface HookCalls {
  /** Declares `POST /<controller>/<hook>`, whose calls `run` answers. */
  serve: (controller: Controller, hook: HookName, run: AnyServedHook) => void
}

/**
 * Sets up, in `fastify`'s context, what every hook call goes through: its decoration, the JSON parser that parses the
 * body read (fastify's own would collect, decode and scan every body before a route could answer a 304), the answer's
 * hand-over and the admission of memory and CPU; returns how to declare a hook's route.
 */
export function hookCalls (fastify: FastifyInstance, options: HookCallOptions): HookCalls {
  const limits = bodyLimits(options.bodyLimit)
  const authenticate = bearerAuth(fastify, options.bearerTokens)
  const telemetry = hookTelemetry(options.metrics)
  const clock = options.admissionClock ?? processClock
  const scheduler = new BodyAdmission<HookCall>({ limit: options.bodyLimit, bodyTimeoutMs: options.bodyTimeoutMs, admissionTimeoutMs: options.admissionTimeoutMs }, clock)
  const cpu = new CpuTurns(clock.now)
  let stopTicking: (() => void) | undefined

  /** Carries out what the scheduler decided. */
  const carryOut = (effects: Array<Effect<HookCall>>): void => {
    for (const effect of effects) {
      const { call } = effect
      switch (effect.action) {
        case 'read': call.reader?.go(); break
        case 'parse': {
          const turn = cpu.turn(call.received)
          if (turn === undefined) call.parseTurn?.resolve()
          else void turn.then(() => { call.parseTurn?.resolve() })
          break
        }
        case 'answer': call.answerTurn?.resolve(); break
        case 'refuse': {
          const turn = call.answerTurn ?? call.parseTurn
          if (turn !== undefined) turn.reject(effect.error)
          else call.reader?.stop(effect.error)
          break
        }
        case 'close':
          telemetry.answerDropped(call, effect.reason)
          call.reply.raw.destroy()
      }
    }
    // One ticker for every call, while there are calls. It stops at a tick that finds none rather than with the last
    // call: calls that come one at a time would each start and stop a timer.
    if (scheduler.calls.length > 0 && stopTicking === undefined) stopTicking = clock.every(TICK_MS, tick)
  }

  const tick = (): void => {
    if (scheduler.calls.length > 0) return carryOut(scheduler.tick())
    stopTicking?.()
    stopTicking = undefined
  }

  /** Carries out the effects of an event of `call`'s own, except that it may read on: that, the caller sees in its phase. */
  const carryOutFor = (call: HookCall, effects: Array<Effect<HookCall>>): boolean => {
    carryOut(effects.filter((effect) => effect.call !== call || effect.action !== 'read'))
    return call.phase === 'reading'
  }

  /**
   * Asks the scheduler for what `ask` asks on `call`'s behalf: true when it is given at once, the CPU's turn included,
   * as it is for most calls; otherwise waits for it (see waitForTurn). Without a promise when it need not wait: a
   * replayed burst of PostgresWriter calls took 2.6 % less CPU a call without the two promises each call made.
   */
  const awaitTurn = (call: HookCall, slot: 'parseTurn' | 'answerTurn', ask: () => Array<Effect<HookCall>>): true | Promise<boolean> => {
    const effects = ask()
    const own = effects.find((effect) => effect.call === call)
    if (own?.action !== 'answer' && (own?.action !== 'parse' || !cpu.runsAtOnce(call.received))) return waitForTurn(call, slot, effects)
    if (effects.length > 1) carryOut(effects.filter((effect) => effect !== own))
    return true
  }

  /**
   * Carries out `effects` and waits on `call` for its turn. Resolves false when the client has gone meanwhile: its
   * call is said to have been aborted, and nobody is left to answer. Rejects with a refusal (a 503 says when to retry).
   */
  const waitForTurn = async (call: HookCall, slot: 'parseTurn' | 'answerTurn', effects: Array<Effect<HookCall>>): Promise<boolean> => {
    try {
      await new Promise<void>((resolve, reject) => {
        call[slot] = { resolve, reject }
        carryOut(effects)
      })
      return true
    } catch (error) {
      if (error instanceof ClientGone) {
        telemetry.clientGone(call, error)
        return false
      }
      throw refusing(call, error)
    } finally {
      call[slot] = undefined
    }
  }

  fastify.decorateRequest('call', null)

  // --- 2. the body, read whole into memory as the scheduler lets it --------------------------------------------------
  /** Reads the body of `call`, and tags it with its ETag when `tagOf` is given. */
  const readBody = async (call: HookCall, payload: Readable, tagOf: RequestTag | undefined): Promise<void> => {
    if (call.announced !== undefined && call.announced > limits.bytes) throw bodyTooLarge(limits.bytes)
    call.admitted = true
    call.reply.raw.once('close', () => {
      call.parseTurn?.reject(new ClientGone('while it waited for memory to parse its body'))
      call.answerTurn?.reject(new ClientGone('while it waited for memory to build its answer'))
      carryOut(scheduler.end(call))
    })
    const gate: BodyGate = {
      open: (reader) => {
        call.reader = reader
        return carryOutFor(call, scheduler.open(call))
      },
      take: (bytes) => carryOutFor(call, scheduler.received(call, bytes)),
      arrived: () => {
        call.reader = undefined
        carryOut(scheduler.arrived(call))
      },
      stopped: (error) => {
        call.reader = undefined
        // Refused while its body arrived or waited: the client may still be sending it.
        if (error instanceof HookError && (error.statusCode === 408 || error.statusCode === 503)) call.cutShort = true
        else carryOut(scheduler.end(call))
      }
    }
    try {
      call.body = await receiveBody(payload, limits, call.announced, gate)
    } catch (error) {
      if (error instanceof ClientGone) return telemetry.clientGone(call, error)
      throw refusing(call, error)
    }
    call.etag = tagOf?.(call.body.chunks)
  }

  /**
   * The body read, then the 304 of a request whose If-None-Match holds its own ETag, or the wait for a turn to parse
   * it. One step rather than three: each step of fastify's costs every call a promise.
   */
  const receive = (tagOf: RequestTag | undefined) => async (request: FastifyRequest, reply: FastifyReply, payload: Readable): Promise<void> => {
    const call = request.call as HookCall
    if (!isJson(request.headers['content-type'])) return
    await readBody(call, payload, tagOf)
    if (call.etag !== undefined && noneMatchHolds(request.headers['if-none-match'], call.etag)) {
      // Awaiting the reply keeps the later steps from running.
      await reply.code(304).header('etag', call.etag).send()
    } else if (call.body !== undefined) {
      const turn = awaitTurn(call, 'parseTurn', () => scheduler.parse(call))
      if (turn !== true) await turn
    }
  }

  // --- 3. the parse ----------------------------------------------------------------------------------------------
  /** The body of `call` parsed, and let go. */
  const parsed = (call: HookCall): unknown => {
    const { body } = call
    // A Content-Type that fastify takes for JSON, but this server does not read as a hook request.
    if (body === undefined) throw new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(call.request.headers['content-type'])
    call.body = undefined
    makeYoungRoom(body.length)
    if (call.unread === undefined || !scannedFirst(body, limits)) return parseBody(body, limits)
    // The parse lets go of the chunks it joins; the whole body is parsed again only for an answer that keeps every
    // child as it is.
    call.inFull = () => parseBody(body, limits)
    return parseBody({ chunks: [...body.chunks], length: body.length }, limits, call.unread)
  }

  fastify.removeContentTypeParser('application/json')
  // In the callback style, as the steps below: an async one would cost every call a promise.
  fastify.addContentTypeParser('application/json', (request, _payload, done) => { done(null, parsed(request.call as HookCall)) })

  // --- 4. the answer ---------------------------------------------------------------------------------------------
  const answer = async (call: HookCall, controller: Controller, io: object, parent: KubernetesObject, run: AnyServedHook): Promise<HookResponse | FastifyReply> => {
    call.parent = parent
    const driftRepaired = (drift: Drift): void => { options.metrics.driftRepairs.inc({ controller: controller.name, drift }) }
    const arrivedAt = performance.now() - call.reply.elapsedTime
    const context = hookContext(controller, parent, kubernetesTime(options.clock()), io, driftRepaired, arrivedAt)
    const weight = answerWeight(controller, context.parent, call.received)
    // Awaited only when it has to wait, as most light steps do not: an await costs a turn of the microtask queue.
    let turn: Promise<void> | undefined
    try {
      const given = awaitTurn(call, 'answerTurn', () => scheduler.answer(call, weight))
      if (given !== true && !await given) return call.reply
      turn = cpu.turn(weight)
      if (turn !== undefined) await turn
      call.response = await run(call.request.body, context, call.inFull)
    } finally {
      // The body's chunks go with it: admission takes their memory as given back once the answer is built.
      call.inFull = undefined
    }
    if (call.etag !== undefined) call.reply.header('etag', call.etag)
    turn = cpu.turn(weight)
    if (turn !== undefined) await turn
    return call.response
  }

  // --- 5. the hand-over ------------------------------------------------------------------------------------------
  /** The answer to `call` as handed to its connection: counted by the scheduler, and in slices when it is large. */
  const handedOver = (call: HookCall, reply: FastifyReply, payload: unknown): unknown => {
    if (reply.statusCode >= 400 && typeof payload === 'string') call.refusal = refusalOf(payload)
    if (!call.admitted) return payload
    const length = typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0
    carryOut(scheduler.answered(call, length))
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
    if (!call.cutShort && length <= SLICE_BYTES) return payload
    reply.header('content-length', String(length))
    if (!call.cutShort) return inSlices(Buffer.from(payload), (taken) => { carryOut(scheduler.taken(call, taken)) })
    reply.header('connection', 'close')
    // Fastify runs no `onResponse` hook for an answer whose connection closed before it ended (the client closed its
    // side once it had the answer).
    reply.raw.once('close', () => { if (!reply.raw.writableFinished) telemetry.logCall(call) })
    return lingering(Buffer.from(payload))
  }
  fastify.addHook('onSend', (request, reply, payload, done) => { done(null, handedOver(request.call as HookCall, reply, payload)) })

  fastify.addHook('onClose', async () => { stopTicking?.() })

  return {
    serve: (controller, hook, run) => {
      const io = ioFor(controller, options.io)
      const fields = readFieldsOf(controller)
      const unread = fields === undefined ? undefined : unreadFields(fields)
      // Only requests that can carry their own ETag can be answered 304.
      const tagOf = answersFromRequestAlone(controller) ? requestTag(controller, hook, options.bodyLimit) : undefined
      const route: RouteShorthandOptions = {
        config: { controller: controller.name, hook },
        schema: { body: controller.type === 'composite' ? CompositeRequestSchemas[hook] : DecoratorRequestSchemas[hook] },
        onRequest: [
          (request, reply, done) => { request.call = new HookCall(controller.name, hook, unread, request, reply); done() },
          ...(authenticate === undefined ? [] : [authenticate])
        ],
        preParsing: receive(tagOf),
        onResponse: (request, _reply, done) => { telemetry.logCall(request.call as HookCall); done() }
      }
      const parentOf = controller.type === 'composite'
        ? (request: FastifyRequest) => (request.body as CompositeRequest).parent
        : (request: FastifyRequest) => (request.body as DecoratorRequest).object
      fastify.post(`/${controller.name}/${hook}`, route, async (request) => await answer(request.call as HookCall, controller, io, parentOf(request), run))
    }
  }
}

/** What refusing the call needs besides its answer: a 503 says when to retry. */
function refusing (call: HookCall, error: unknown): unknown {
  if (error instanceof HookError && error.statusCode === 503) call.reply.header('retry-after', String(RETRY_AFTER_SECONDS))
  return error
}

/** The message of an error answer (wire/schemas.ts's ErrorResponse), for the call's log line. */
function refusalOf (payload: string): string | undefined {
  try {
    const { message } = JSON.parse(payload) as Partial<ErrorResponse>
    return typeof message === 'string' ? message : undefined
  } catch {
    return undefined
  }
}

/** `bytes` in slices of SLICE_BYTES, each reported `taken` once the connection asks for the next. */
function inSlices (bytes: Buffer, taken: (bytes: number) => void): Readable {
  let offset = 0
  let lastSlice = 0
  return new Readable({
    highWaterMark: 0,
    read () {
      if (lastSlice > 0) taken(lastSlice)
      lastSlice = Math.min(SLICE_BYTES, bytes.length - offset)
      this.push(lastSlice === 0 ? null : bytes.subarray(offset, offset + lastSlice))
      offset += lastSlice
    }
  })
}

/**
 * The answer to a request whose body was cut short, sent whole, with `Connection: close`; the response then ends, and
 * Node.js closes the connection, once the client has closed its side or after LINGER_MS. Meanwhile what the client
 * still sends is read and dropped. Closed at once, the bytes the client sent after the answer turn the close into a
 * reset, and a client still writing may lose the answer: in two runs of the slow-client fault test, 22 and 2 of 200
 * trickling clients did.
 */
function lingering (bytes: Buffer): Readable {
  const answer = new Readable({ read () {} })
  answer.push(bytes)
  const timer = setTimeout(() => { answer.push(null) }, LINGER_MS)
  answer.once('close', () => { clearTimeout(timer) })
  return answer
}
