/**
 * Starts a `node:http` side of the bench on PORT and HOST, keeping idle connections 95 s as the hook server does, and
 * stops it on SIGTERM.
 */
export function listen (server) {
  process.once('SIGTERM', () => {
    server.close()
    server.closeAllConnections()
    process.exit(0)
  })
  server.keepAliveTimeout = 95_000
  server.listen(Number(process.env.PORT), process.env.HOST)
}
