import type { FastifyReply, FastifyRequest } from 'fastify'
import { noneMatchHolds } from './etag.js'

/**
 * The `preParsing` hook of the hooks that carry ETags, after the body was read and digested: a request whose
 * If-None-Match holds its own ETag is answered 304, never parsed. Awaiting the reply waits until it is sent, so that
 * no later step of the request runs.
 */
export async function answerNotModified (request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { etag } = request
  if (etag !== null && noneMatchHolds(request.headers['if-none-match'], etag)) await reply.code(304).header('etag', etag).send()
}
