import type { FastifyPluginAsync } from 'fastify'
import { definedHooks, servedHooks, type Controller } from '../framework/controller.js'
import { hookCalls, type HookCallOptions } from './hook-call.js'

export interface HookRoutesOptions extends HookCallOptions {
  controllers: readonly Controller[]
}

/** `POST /<controller>/sync`, and `/finalize` where the controller has one, for every controller: each call as hook-call.ts takes it. */
export const hookRoutes: FastifyPluginAsync<HookRoutesOptions> = async (fastify, options) => {
  const calls = hookCalls(fastify, options)
  for (const controller of options.controllers) {
    const hooks = controller.type === 'composite' ? definedHooks(servedHooks(controller, options.bodyLimit)) : definedHooks(servedHooks(controller, options.bodyLimit))
    for (const [hook, run] of hooks) calls.serve(controller, hook, run)
  }
}
