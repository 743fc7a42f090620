import { createServer } from 'node:net'

/** A TCP port on 127.0.0.1 that nothing listens on right now, as the system picks one. */
export async function freePort (): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => { resolvePort(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}
