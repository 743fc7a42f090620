import net from 'node:net'

/**
 * A client that sends a request body slowly, over a socket of its own: the headers, an optional burst, then one byte
 * every `intervalMs` (or nothing more, with no interval), until the server answers or closes the connection, or the
 * whole `content` is sent.
 */

export interface SlowBodyOptions {
  port: number
  path: string
  /** `chunked`: Transfer-Encoding: chunked, a chunk per send; a number: the Content-Length the headers announce. */
  length: 'chunked' | number
  /** Bytes sent at once after the headers. Default 0. */
  burst?: number
  /** One more byte every `intervalMs` after the burst; undefined: the client stalls after the burst. */
  intervalMs?: number
  headers?: Record<string, string>
  /** The body to send, whole in the end; by default a JSON string that never closes, as long as the client goes on. */
  content?: Buffer
}

export interface SlowAnswer {
  /** The status of the server's answer; undefined when the connection closed without one. */
  status: number | undefined
  /** The answer as received (headers and body), or ''. */
  text: string
  /** From the connection's opening to the answer or the close. */
  ms: number
  /** Body bytes the client had written by then. */
  sent: number
}

export interface SlowBody {
  /** Settles once the server answers or the connection closes; never rejects. */
  answered: Promise<SlowAnswer>
  /** Settles once the server has closed the connection (or it failed), with the time since it opened. */
  closed: Promise<number>
  /** Body bytes written so far. */
  sent: () => number
  /** Closes the connection without finishing the body: the client goes away. */
  close: () => void
}

const openings = new Map<number, Buffer>()

/**
 * The first `bytes` of a body that opens a JSON string and never closes it: nothing the server could answer early from
 * its content. One buffer per size, shared by every client.
 */
function opening (bytes: number): Buffer {
  let buffer = openings.get(bytes)
  if (buffer === undefined) {
    buffer = Buffer.alloc(bytes, 'a')
    buffer.write('{"x":"'.slice(0, bytes))
    openings.set(bytes, buffer)
  }
  return buffer
}

export function slowBody (options: SlowBodyOptions): SlowBody {
  const chunked = options.length === 'chunked'
  const head = [
    `POST ${options.path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${options.length}`,
    ...Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}`)
  ].join('\r\n') + '\r\n\r\n'
  const started = performance.now()
  const socket = net.connect({ port: options.port, host: '127.0.0.1' })
  let sent = 0
  let text = ''
  let timer: NodeJS.Timeout | undefined
  const content = options.content
  const send = (wanted: number): void => {
    const bytes = content === undefined ? wanted : Math.min(wanted, content.length - sent)
    if (bytes === 0 || socket.destroyed) return
    if (chunked) socket.write(`${bytes.toString(16)}\r\n`)
    socket.write(content !== undefined ? content.subarray(sent, sent + bytes) : sent === 0 ? opening(bytes) : 'a'.repeat(bytes))
    if (chunked) socket.write('\r\n')
    sent += bytes
    if (content !== undefined && sent === content.length) {
      clearInterval(timer)
      if (chunked) socket.write('0\r\n\r\n')
    }
  }
  // The client sends nothing more once answered, and closes its side once the server has closed its own.
  const closed = new Promise<number>((resolve) => { socket.once('close', () => { resolve(performance.now() - started) }) })
  const answered = new Promise<SlowAnswer>((resolve) => {
    const settle = (): void => {
      clearInterval(timer)
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]
      resolve({ status: status === undefined ? undefined : Number(status), text, ms: performance.now() - started, sent })
    }
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      // Settled once the whole answer is in: the headers, then as many bytes as its Content-Length says.
      const end = text.indexOf('\r\n\r\n')
      const length = /\r\ncontent-length: (\d+)/i.exec(text)?.[1]
      if (end !== -1 && (length === undefined || text.length >= end + 4 + Number(length))) settle()
    })
    socket.on('close', settle)
    socket.on('error', () => {})
  })
  socket.once('connect', () => {
    socket.write(head)
    send(options.burst ?? 0)
    if (options.intervalMs !== undefined) timer = setInterval(() => { send(1) }, options.intervalMs)
  })
  return { answered, closed, sent: () => sent, close: () => { clearInterval(timer); socket.destroy() } }
}
