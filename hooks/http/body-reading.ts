import type { Readable } from 'node:stream'
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { HookError } from '../framework/errors.js'
import type { RequestDigest } from './etag.js'
import { bodyTooLarge, parseBody, type BodyLimits, type ReceivedBody } from './request-body.js'
import { ClientGone, prepareRefusal, type BodyAdmission, type BodyClaim } from './body-admission.js'

/**
 * Reading a hook request's body: the whole of it, into memory charged as the bytes arrive (body-admission.ts), digested
 * on the way for its ETag, before anything decides on it; then, once admitted to parsing, parsed by the route's JSON
 * parser (request-body.ts).
 */

declare module 'fastify' {
  interface FastifyRequest {
    /** The body as received, until the JSON parser takes it. */
    receivedBody: ReceivedBody | null
    /** The ETag of the request, on the hooks that carry them. */
    etag: string | null
  }
}

/**
 * The Content-Types read as a hook request: JSON, as Metacontroller sends it, in UTF-8 (the charset JSON has). Any other
 * gets 415 unread, before its bytes take memory or could match an ETag.
 */
const JSON_CONTENT_TYPE = /^application\/json[ \t]*(;[ \t]*charset[ \t]*=[ \t]*"?utf-8"?[ \t]*)?$/i

export function isJson (contentType: string | undefined): boolean {
  return contentType !== undefined && JSON_CONTENT_TYPE.test(contentType)
}

/**
 * Reads a body once `claim` lets it start, refusing it (413) as soon as it passes the byte limit, charging `claim` for
 * each chunk (and pausing while the chunk waits for room), and feeding `digest` as the bytes arrive. `expectedLength` is the Content-Length,
 * when the client sent one. Rejects with what the claim refuses (408, 503), or ClientGone.
 */
export async function receiveBody (stream: Readable, limits: BodyLimits, expectedLength: number | undefined, digest: RequestDigest | undefined, claim: BodyClaim): Promise<ReceivedBody> {
  return await new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let length = 0
    let waiting: Buffer | undefined
    const detach = (): void => {
      stream.removeListener('data', onData)
      stream.removeListener('end', onEnd)
      stream.removeListener('error', onGone)
      stream.removeListener('close', onGone)
    }
    const stop = (error: Error): void => {
      detach()
      // The rest of the body, if it comes, is read and dropped: what waits unread would reset the connection.
      stream.resume()
      claim.release()
      reject(error)
    }
    const keep = (chunk: Buffer): void => {
      length += chunk.length
      digest?.update(chunk)
      chunks.push(chunk)
    }
    const onData = (chunk: Buffer): void => {
      if (length + chunk.length > limits.bytes) return stop(bodyTooLarge(limits.bytes))
      if (claim.take(chunk.length)) return keep(chunk)
      waiting = chunk
      stream.pause()
    }
    const onEnd = (): void => {
      if (expectedLength !== undefined && length !== expectedLength) {
        return stop(new HookError(400, `request body has ${length} bytes, but its Content-Length says ${expectedLength}`))
      }
      detach()
      claim.arrived()
      resolve({ chunks, length })
    }
    // The connection failed or closed before the body's end: `error` (with listeners) then `close`, or `close` alone.
    const onGone = (): void => { stop(new ClientGone('while its body was arriving')) }
    if (stream.destroyed) return onGone()
    const mayRead = claim.start({
      refuse: stop,
      resume: () => {
        if (waiting !== undefined) keep(waiting)
        waiting = undefined
        stream.resume()
      }
    }, expectedLength ?? 0)
    stream.on('data', onData)
    stream.once('end', onEnd)
    stream.once('error', onGone)
    stream.once('close', onGone)
    // Unread until its Content-Length fits: a 'data' listener alone would start the flow.
    if (mayRead) stream.resume()
    else stream.pause()
  })
}

export interface BodyReadingOptions {
  admission: BodyAdmission
  limits: BodyLimits
  clientGone: (request: FastifyRequest, reply: FastifyReply, error: ClientGone) => void
}

/**
 * Decorates requests with what reading leaves for later steps, and makes the route's JSON parser parse the body read.
 * Fastify's own parser would collect, decode and scan every body before a route could answer a 304.
 */
export function bodyReading (fastify: FastifyInstance, options: BodyReadingOptions): (digest: (() => RequestDigest) | undefined) => (request: FastifyRequest, reply: FastifyReply, payload: Readable) => Promise<void> {
  const { admission, limits, clientGone } = options
  fastify.decorateRequest('receivedBody', null)
  fastify.decorateRequest('etag', null)
  fastify.decorateRequest('bodyClaim', null)
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', async (request: FastifyRequest) => {
    const body = request.receivedBody
    // A Content-Type that fastify takes for JSON, but this server does not read as a hook request.
    if (body === null) throw new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(request.headers['content-type'])
    request.receivedBody = null
    return parseBody(body, limits)
  })

  /** The `preParsing` hook of a route whose requests are digested by `digest` (none: no ETags). */
  return (digest) => async (request, reply, payload) => {
    if (!isJson(request.headers['content-type'])) return
    const header = request.headers['content-length']
    const expectedLength = header === undefined ? undefined : Number(header)
    if (expectedLength !== undefined && expectedLength > limits.bytes) throw bodyTooLarge(limits.bytes)
    const requestDigest = digest?.()
    const claim = admission.claim()
    request.bodyClaim = claim
    reply.raw.once('close', claim.release)
    try {
      request.receivedBody = await receiveBody(payload, limits, expectedLength, requestDigest, claim)
    } catch (error) {
      if (error instanceof ClientGone) return clientGone(request, reply, error)
      prepareRefusal(request, reply, error, false)
      throw error
    }
    if (requestDigest !== undefined) request.etag = requestDigest.etag()
  }
}
