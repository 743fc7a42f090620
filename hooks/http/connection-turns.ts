import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

type Handler = (request: IncomingMessage, response: ServerResponse) => void

/**
 * Requests pipelined on one connection, handed to `handle` one at a time: a connection's next request only once the
 * answer to its previous one has been sent, or its connection closed. Node.js hands over every request it has parsed
 * from a connection at once and queues their answers; a client that pipelines requests with large answers, and never
 * reads them, would have every answer built and held outside any bound. Meanwhile the connection is not read, so that
 * what waits is only what had already arrived. So a pipelining client costs what the same requests sent one after
 * another cost, and gets the same answers, in order.
 */
export function inTurn (handle: Handler): Handler {
  const waiting = new WeakMap<Socket, Array<[IncomingMessage, ServerResponse]>>()

  const serve = (socket: Socket, request: IncomingMessage, response: ServerResponse): void => {
    response.once('close', () => {
      const queue = waiting.get(socket)
      const next = queue?.shift()
      if (next === undefined || socket.destroyed) {
        waiting.delete(socket)
        if (!socket.destroyed && socket.isPaused()) socket.resume()
        return
      }
      serve(socket, ...next)
    })
    handle(request, response)
  }

  return (request, response) => {
    const { socket } = request
    const queue = waiting.get(socket)
    if (queue === undefined) {
      waiting.set(socket, [])
      serve(socket, request, response)
      return
    }
    queue.push([request, response])
    socket.pause()
  }
}
