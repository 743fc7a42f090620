import { createServer } from 'node:http'

/**
 * What a side says once it listens, as the hook server does: its "hook server ready" line with the port it got (PORT
 * may be 0, the system's choice), which dev/server-process.ts waits for. Health is asked on that port too.
 */
export function sayReady (port) {
  process.stdout.write(`${JSON.stringify({ msg: 'hook server ready', port, probePort: port })}\n`)
}

/**
 * Starts a `node:http` side of the bench on PORT and HOST. Like the hook server, it answers GET /healthz and keeps idle
 * connections 95 s; it hands every other request to `handle`, and stops on SIGTERM.
 */
export function listen (handle) {
  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
      return
    }
    handle(request, response)
  })
  process.once('SIGTERM', () => {
    server.close()
    server.closeAllConnections()
    process.exit(0)
  })
  server.keepAliveTimeout = 95_000
  server.listen(Number(process.env.PORT), process.env.HOST, () => { sayReady(server.address().port) })
}
