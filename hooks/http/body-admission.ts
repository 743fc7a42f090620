import type { FastifyReply, FastifyRequest } from 'fastify'
import { bodyTooLarge, type BodyLimits } from '../request-body.js'

/** The client closed its connection before its answer: nothing went wrong, and nobody is left to answer. */
export class ClientGone extends Error {
  constructor (readonly during: string) {
    super(`the client closed the connection ${during}`)
    this.name = 'ClientGone'
  }
}

/**
 * Admits request bodies into memory in arrival order while the bytes admitted stay within `capacity`; a body is
 * always admitted when nothing else is. Parsing runs on one thread anyway, so a waiting request loses no time, and
 * it holds no more than its socket's buffers: its body is not read until it is admitted, so TCP makes the client
 * wait.
 */
export class BodyBudget {
  private inUse = 0
  private readonly waiting: Array<{ bytes: number, admit: () => void }> = []

  constructor (private readonly capacity: number) {}

  /**
   * Asks for `bytes`. `admitted` resolves once they fit, or rejects with ClientGone when the ticket is released first
   * (the client left); `release` gives the bytes back, and may be called any number of times.
   */
  ticket (bytes: number): { admitted: Promise<void>, release: () => void } {
    let state: 'waiting' | 'admitted' | 'released' = 'waiting'
    let resolve!: () => void
    let reject!: (error: Error) => void
    const admitted = new Promise<void>((...settle) => { [resolve, reject] = settle })
    const entry = {
      bytes,
      admit: () => {
        state = 'admitted'
        this.inUse += bytes
        resolve()
      }
    }
    const release = (): void => {
      if (state === 'released') return
      if (state === 'admitted') this.inUse -= bytes
      else {
        this.waiting.splice(this.waiting.indexOf(entry), 1)
        reject(new ClientGone('while it waited for memory to receive its body'))
      }
      state = 'released'
      this.admitNext()
    }
    this.waiting.push(entry)
    this.admitNext()
    return { admitted, release }
  }

  private admitNext (): void {
    for (let next = this.waiting[0]; next !== undefined; next = this.waiting[0]) {
      if (this.inUse > 0 && this.inUse + next.bytes > this.capacity) return
      this.waiting.shift()
      next.admit()
    }
  }
}

/**
 * The `preParsing` hook that admits a body into `budget` before it is read: its Content-Length, or the whole limit for
 * a body without one. The body gives its bytes back when its answer is done or its connection closes, whichever comes
 * first (the response's `close` event covers both). A client that goes away meanwhile is `clientGone`'s.
 */
export function bodyAdmission (budget: BodyBudget, limits: BodyLimits, clientGone: (request: FastifyRequest, reply: FastifyReply, error: ClientGone) => void) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const header = request.headers['content-length']
    const length = header === undefined ? undefined : Number(header)
    if (length !== undefined && length > limits.bytes) throw bodyTooLarge(limits.bytes)
    const ticket = budget.ticket(length ?? limits.bytes)
    reply.raw.once('close', ticket.release)
    try {
      await ticket.admitted
    } catch (error) {
      if (error instanceof ClientGone) return clientGone(request, reply, error)
      throw error
    }
  }
}
