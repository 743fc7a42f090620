import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BearerTokens, type BearerTokenSource } from './bearer-token.js'
import { HookError } from '../framework/errors.js'

/**
 * The `onRequest` hook of every hook route when HOOKS_BEARER_TOKEN or HOOKS_BEARER_TOKEN_FILE is set: a call without one
 * of the tokens gets 401 before any of its body is read. Undefined when neither is set.
 */
export function bearerAuth (fastify: FastifyInstance, source: BearerTokenSource | undefined): ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined {
  if (source === undefined) return undefined
  const tokens = new BearerTokens(source, fastify.log)
  tokens.start()
  fastify.addHook('onClose', async () => { tokens.stop() })
  return async (request, reply) => {
    if (!tokens.accepts(request.headers.authorization)) {
      reply.header('www-authenticate', 'Bearer')
      throw new HookError(401, `missing or wrong bearer token: send Authorization: Bearer <${tokens.expected}>`)
    }
  }
}
