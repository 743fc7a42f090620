import { Readable } from 'node:stream'
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { HookError } from '../framework/errors.js'
import { BodyAdmission, Call, RETRY_AFTER_SECONDS, TICK_MS, type AdmissionBounds, type Effect, type SchedulerClock } from './body-admission.js'
import { ClientGone, isJson, receiveBody, type BodyGate } from './body-reading.js'
import { CpuTurns } from './cpu-turns.js'
import type { RequestDigest } from './etag.js'
import { bodyTooLarge, parseBody, scannedFirst, type BodyLimits, type ReceivedBody, type UnreadFields } from './request-body.js'

/**
 * The hook routes' side of body-admission.ts: each request's call, from its headers to the end of its answer. It reads
 * the body as the scheduler lets it, waits for its turn to parse, hands the answer over (sent in slices, so that what
 * the client takes is counted), answers the scheduler's refusals, closes what it says to close, and calls its `tick`.
 */

interface Turn { resolve: () => void, reject: (error: Error) => void }

/** A request's call, with what carries out the scheduler's decisions about it. */
class HookCall extends Call {
  /** The body's reader, while it reads or waits to. */
  reader: { go: () => void, stop: (error: Error) => void } | undefined
  /** The wait for a turn to parse. */
  parseTurn: Turn | undefined
  /** The wait for memory to build its answer. */
  answerTurn: Turn | undefined
  /** Its body did not arrive whole: its connection closes after the answer. */
  cutShort = false

  constructor (announced: number | undefined, readonly request: FastifyRequest, readonly reply: FastifyReply, readonly unread: UnreadFields | undefined) {
    super(announced)
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's call in admission, once its body started to be read. */
    admission: HookCall | null
    /** The body as received, until the JSON parser takes it. */
    receivedBody: ReceivedBody | null
    /** The ETag of the request, on the hooks that carry them. */
    etag: string | null
    /**
     * The body parsed in full, when the parse left out fields of observed children that no hook reads; kept until the
     * hook has answered.
     */
    inFull: (() => unknown) | null
  }
}

/** Answers larger than this are sent in slices of this size, each counted as taken once the socket has taken it. */
export const SLICE_BYTES = 64 * 1024

/** How long a connection whose body was cut short stays open after its answer: see `lingering`. */
export const LINGER_MS = 1000

export interface CallAdmissionOptions {
  bounds: AdmissionBounds
  limits: BodyLimits
  /** A client that closed its connection before its body arrived or was parsed. */
  clientGone: (request: FastifyRequest, reply: FastifyReply, error: ClientGone) => void
  /** An answer whose connection was closed before the client took it. */
  answerDropped: (request: FastifyRequest, reply: FastifyReply, reason: string) => void
  /**
   * A refusal of a body cut short whose connection closed before its answer ended (the client closed its side once it
   * had the answer): fastify runs no `onResponse` hook for it.
   */
  refusalClosed: (request: FastifyRequest, reply: FastifyReply) => void
  /** The scheduler's clock and ticker; the process's by default. */
  clock?: AdmissionClock
}

/** What the scheduler's time comes from, and a way to run something every so many milliseconds. */
export interface AdmissionClock extends SchedulerClock {
  /** Runs `run` every `ms` until the returned function is called. */
  every: (ms: number, run: () => void) => () => void
}

/** The process's clock; its idle time is the event loop's (time spent waiting for I/O). */
export const processClock: AdmissionClock = {
  now: () => performance.now(),
  idle: () => performance.eventLoopUtilization().idle,
  every: (ms, run) => {
    const timer = setInterval(run, ms).unref()
    return () => { clearInterval(timer) }
  }
}

export interface CallAdmission {
  /**
   * The `preParsing` hook that reads the body, digested by `digest` (none: no ETags), to be parsed without the fields of
   * observed children in `unread` when it is large.
   */
  readBody: (digest: (() => RequestDigest) | undefined, unread: UnreadFields | undefined) => (request: FastifyRequest, reply: FastifyReply, payload: Readable) => Promise<void>
  /** The `preParsing` hook that waits for the body's turn to be parsed. */
  awaitParseTurn: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  /**
   * Waits, in a parsed call, until its answer, which may take `bytes`, may be built, and for its turn of the CPU to
   * build it: false when its client has gone meanwhile (nobody is left to answer). Rejects with the 503 of a call
   * that waited too long.
   */
  awaitAnswerTurn: (request: FastifyRequest, reply: FastifyReply, bytes: number) => Promise<boolean>
  /** The turn of the CPU of a step that works on `bytes`: undefined when it may run now. */
  cpuTurn: (bytes: number) => Promise<void> | undefined
}

/**
 * Sets up the admission of the calls of the routes of `fastify`'s context: their decorations, the JSON parser that
 * parses the body read, the `onSend` hook that hands answers over; returns the `preParsing` hooks for the routes.
 * Fastify's own parser would collect, decode and scan every body before a route could answer a 304.
 */
export function callAdmission (fastify: FastifyInstance, options: CallAdmissionOptions): CallAdmission {
  const { limits, clientGone, answerDropped, refusalClosed } = options
  const clock = options.clock ?? processClock
  const scheduler = new BodyAdmission<HookCall>(options.bounds, clock)
  const cpu = new CpuTurns(clock.now)
  let stopTicking: (() => void) | undefined

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
          answerDropped(call.request, call.reply, effect.reason)
          call.reply.raw.destroy()
      }
    }
    // One ticker for every call, while there are calls.
    if (scheduler.calls.size > 0 && stopTicking === undefined) {
      stopTicking = clock.every(TICK_MS, () => { carryOut(scheduler.tick()) })
    } else if (scheduler.calls.size === 0 && stopTicking !== undefined) {
      stopTicking()
      stopTicking = undefined
    }
  }

  /** Carries out the effects of an event of `call`'s own, except that it may read on: that, the caller sees in its phase. */
  const carryOutFor = (call: HookCall, effects: Array<Effect<HookCall>>): boolean => {
    carryOut(effects.filter((effect) => effect.call !== call || effect.action !== 'read'))
    return call.phase === 'reading'
  }

  fastify.decorateRequest('admission', null)
  fastify.decorateRequest('receivedBody', null)
  fastify.decorateRequest('etag', null)
  fastify.decorateRequest('inFull', null)
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', async (request: FastifyRequest) => {
    const body = request.receivedBody
    // A Content-Type that fastify takes for JSON, but this server does not read as a hook request.
    if (body === null) throw new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(request.headers['content-type'])
    request.receivedBody = null
    const unread = request.admission?.unread
    if (unread === undefined || !scannedFirst(body, limits)) return parseBody(body, limits)
    // The parse lets go of the chunks it joins; the whole body is parsed again only for an answer that keeps every
    // child as it is.
    request.inFull = () => parseBody(body, limits)
    return parseBody({ chunks: [...body.chunks], length: body.length }, limits, unread)
  })

  fastify.addHook('onSend', async (request, reply, payload) => {
    const call = request.admission
    if (call === null) return payload
    const length = typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0
    carryOut(scheduler.answered(call, length))
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
    if (!call.cutShort && length <= SLICE_BYTES) return payload
    reply.header('content-length', String(length))
    if (!call.cutShort) return inSlices(Buffer.from(payload), (taken) => { carryOut(scheduler.taken(call, taken)) })
    reply.header('connection', 'close')
    reply.raw.once('close', () => { if (!reply.raw.writableFinished) refusalClosed(request, reply) })
    return lingering(Buffer.from(payload))
  })

  fastify.addHook('onClose', async () => { stopTicking?.() })

  /** What refusing the call needs besides its answer: a 503 says when to retry. */
  const refusing = (reply: FastifyReply, error: unknown): void => {
    if (error instanceof HookError && error.statusCode === 503) reply.header('retry-after', String(RETRY_AFTER_SECONDS))
  }

  return {
    readBody: (digest, unread) => async (request, reply, payload) => {
      if (!isJson(request.headers['content-type'])) return
      const header = request.headers['content-length']
      const expectedLength = header === undefined ? undefined : Number(header)
      if (expectedLength !== undefined && expectedLength > limits.bytes) throw bodyTooLarge(limits.bytes)
      const requestDigest = digest?.()
      const call = new HookCall(expectedLength, request, reply, unread)
      request.admission = call
      reply.raw.once('close', () => {
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
        request.receivedBody = await receiveBody(payload, limits, expectedLength, requestDigest, gate)
      } catch (error) {
        if (error instanceof ClientGone) return clientGone(request, reply, error)
        refusing(reply, error)
        throw error
      }
      if (requestDigest !== undefined) request.etag = requestDigest.etag()
    },

    awaitParseTurn: async (request, reply) => {
      const call = request.admission
      if (call === null) return
      try {
        await new Promise<void>((resolve, reject) => {
          call.parseTurn = { resolve, reject }
          carryOut(scheduler.parse(call))
        })
      } catch (error) {
        if (error instanceof ClientGone) return clientGone(request, reply, error)
        refusing(reply, error)
        throw error
      } finally {
        call.parseTurn = undefined
      }
    },

    awaitAnswerTurn: async (request, reply, bytes) => {
      const call = request.admission
      if (call === null) return true
      try {
        await new Promise<void>((resolve, reject) => {
          call.answerTurn = { resolve, reject }
          carryOut(scheduler.answer(call, bytes))
        })
      } catch (error) {
        if (!(error instanceof ClientGone)) {
          refusing(reply, error)
          throw error
        }
        clientGone(request, reply, error)
        return false
      } finally {
        call.answerTurn = undefined
      }
      await cpu.turn(bytes)
      return true
    },

    cpuTurn: (bytes) => cpu.turn(bytes)
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
