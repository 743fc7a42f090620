import { createServer, connect, type Socket } from 'node:net'

/**
 * A TCP proxy in front of PostgreSQL that counts, from the protocol itself
 * (https://www.postgresql.org/docs/current/protocol-flow.html), what its clients made the server do:
 *
 * - round trips: each ReadyForQuery but the one that ends a connection's start-up. The server sends one when it has
 *   answered everything up to a Sync (the extended protocol) or a Query (the simple one): that answer is what a
 *   client waits for.
 * - statements: each CommandComplete or EmptyQueryResponse, one per statement the server ran to its end.
 *
 * For the benchmark: a client that points at `connectionString` instead of PostgreSQL is counted. The proxy reads
 * only what the server sends, over TCP, and only on unencrypted connections: one the server agrees to encrypt is
 * closed.
 */

export interface WireCounts {
  roundTrips: number
  statements: number
}

export interface WireCounter {
  /** `target` with this proxy's host and port. */
  connectionString: string
  counts: () => WireCounts
  close: () => Promise<void>
}

/** The codes of the start-up requests that the server answers with one untyped byte: SSLRequest and GSSENCRequest. */
const ENCRYPTION_REQUESTS = new Set([80877103, 80877104])

/** Counts one connection's server messages into `counts`. */
class ServerMessages {
  private pending: Buffer = Buffer.alloc(0)
  private startedUp = false
  /** Bytes of untyped answers (to an encryption request) still to come before the typed messages. */
  private untyped = 0

  constructor (private readonly counts: WireCounts) {}

  /** The client's first message: the server answers an encryption request with one untyped byte, `N` or `S`. */
  clientStart (chunk: Buffer): Buffer {
    if (chunk.length >= 8 && ENCRYPTION_REQUESTS.has(chunk.readInt32BE(4))) this.untyped++
    return chunk
  }

  read (chunk: Buffer): Buffer {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    let offset = 0
    for (;;) {
      if (this.untyped > 0 && offset < this.pending.length) {
        if (this.pending[offset] !== 0x4e) throw new Error('the server accepted an encrypted connection, which the wire counter cannot read: connect without TLS (sslmode=disable)')
        this.untyped--
        offset++
        continue
      }
      if (this.pending.length - offset < 5) break
      const length = this.pending.readInt32BE(offset + 1)
      if (this.pending.length - offset < 1 + length) break
      this.message(String.fromCharCode(this.pending[offset] as number))
      offset += 1 + length
    }
    this.pending = this.pending.subarray(offset)
    return chunk
  }

  private message (type: string): void {
    if (type === 'Z') {
      if (this.startedUp) this.counts.roundTrips++
      this.startedUp = true
    } else if (type === 'C' || type === 'I') {
      this.counts.statements++
    }
  }
}

/** Starts a counting proxy to the PostgreSQL of `target` (a postgres:// URL), on a port of the system's choice. */
export async function startWireCounter (target: string): Promise<WireCounter> {
  const url = new URL(target)
  const host = url.hostname === '' ? 'localhost' : url.hostname
  const port = Number(url.port === '' ? 5432 : url.port)
  const counts: WireCounts = { roundTrips: 0, statements: 0 }
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(port, host)
    const messages = new ServerMessages(counts)
    let first = true
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => { sockets.delete(socket) })
      socket.on('error', () => { client.destroy(); upstream.destroy() })
    }
    client.on('data', (chunk: Buffer) => {
      upstream.write(first ? messages.clientStart(chunk) : chunk)
      first = false
    })
    upstream.on('data', (chunk: Buffer) => {
      try {
        client.write(messages.read(chunk))
      } catch (error) {
        client.destroy(error as Error)
        upstream.destroy()
      }
    })
    client.on('end', () => upstream.end())
    upstream.on('end', () => client.end())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const proxied = new URL(target)
  proxied.hostname = '127.0.0.1'
  proxied.port = String((server.address() as { port: number }).port)
  return {
    connectionString: proxied.toString(),
    counts: () => ({ ...counts }),
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}
