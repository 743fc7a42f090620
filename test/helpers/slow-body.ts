import net from 'node:net'

/**
 * A client that sends a request body slowly, over a socket of its own: the headers, an optional burst, then `step`
 * bytes every `intervalMs` (or nothing more, with no interval), until the server answers or closes the connection, or
 * the whole `content` is sent. Variants: earlier requests on the same connection (pipelined, or one after the other's
 * answer), headers sent byte by byte, chunk-size lines with long extensions, and a client that does not read.
 */

export interface SlowBodyOptions {
  port: number
  path: string
  /** `chunked`: Transfer-Encoding: chunked, a chunk per send; a number: the Content-Length the headers announce. */
  length: 'chunked' | number
  /** Bytes sent at once after the headers. Default 0. */
  burst?: number
  /** `step` more bytes every `intervalMs` after the burst; undefined: the client stalls after the burst. */
  intervalMs?: number
  /** Default 1. */
  step?: number
  headers?: Record<string, string>
  /** The body to send, whole in the end; by default a JSON string that never closes, as long as the client goes on. */
  content?: Buffer
  /**
   * Whole requests sent first on the same connection: all at once with this one (`pipelined`), or each once the
   * answer to the one before has arrived. `answered` is this request's answer, after theirs.
   */
  earlier?: { requests: Buffer[], pipelined: boolean }
  /** The headers go one byte every `intervalMs` (the body only after them). */
  slowHeaders?: boolean
  /** Chunked: every chunk-size line carries an extension of this many bytes. */
  chunkExtension?: number
  /** false: the client reads nothing of what the server sends until `read()` is called. Default true. */
  reads?: boolean
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
  /** Starts reading what the server sent, for a client made with `reads: false`. */
  read: () => void
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

/** A whole POST of `body` as JSON to `path`, with its Content-Length: for `earlier`. */
export function wholeRequest (path: string, body: string | Buffer): Buffer {
  const bytes = Buffer.from(body)
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\n\r\n`), bytes])
}

/** Where the first whole answer in `text` (from `from`) ends, or -1 while it has not all arrived. */
function answerEnd (text: string, from: number): number {
  const end = text.indexOf('\r\n\r\n', from)
  if (end === -1) return -1
  const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(from, end))?.[1]
  const after = end + 4 + Number(length ?? 0)
  return text.length >= after ? after : -1
}

export function slowBody (options: SlowBodyOptions): SlowBody {
  const chunked = options.length === 'chunked'
  const head = Buffer.from([
    `POST ${options.path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${options.length}`,
    ...Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}`)
  ].join('\r\n') + '\r\n\r\n')
  const earlier = options.earlier?.requests ?? []
  const extension = options.chunkExtension === undefined ? '' : `;${'x'.repeat(options.chunkExtension)}`
  const started = performance.now()
  const socket = net.connect({ port: options.port, host: '127.0.0.1' })
  let sent = 0
  let headSent = 0
  let text = ''
  /** Where the answers to earlier requests end in `text`, once they have. */
  let earlierEnd = 0
  let earlierAnswered = 0
  let timer: NodeJS.Timeout | undefined
  const content = options.content
  const send = (wanted: number): void => {
    const bytes = content === undefined ? wanted : Math.min(wanted, content.length - sent)
    if (bytes === 0 || socket.destroyed) return
    if (chunked) socket.write(`${bytes.toString(16)}${extension}\r\n`)
    socket.write(content !== undefined ? content.subarray(sent, sent + bytes) : sent === 0 ? opening(bytes) : 'a'.repeat(bytes))
    if (chunked) socket.write('\r\n')
    sent += bytes
    if (content !== undefined && sent === content.length) {
      clearInterval(timer)
      if (chunked) socket.write('0\r\n\r\n')
    }
  }
  const sendBody = (): void => {
    send(options.burst ?? 0)
    if (options.intervalMs !== undefined) timer = setInterval(() => { send(options.step ?? 1) }, options.intervalMs)
  }
  const sendHead = (): void => {
    if (options.slowHeaders !== true || options.intervalMs === undefined) {
      socket.write(head)
      sendBody()
      return
    }
    timer = setInterval(() => {
      if (socket.destroyed) return
      socket.write(head.subarray(headSent, headSent + 1))
      if (++headSent < head.length) return
      clearInterval(timer)
      sendBody()
    }, options.intervalMs)
  }
  // The client sends nothing more once answered, and closes its side once the server has closed its own.
  const closed = new Promise<number>((resolve) => { socket.once('close', () => { resolve(performance.now() - started) }) })
  const answered = new Promise<SlowAnswer>((resolve) => {
    const settle = (): void => {
      clearInterval(timer)
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text.slice(earlierEnd))?.[1]
      resolve({ status: status === undefined ? undefined : Number(status), text: text.slice(earlierEnd), ms: performance.now() - started, sent })
    }
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      for (let end = answerEnd(text, earlierEnd); end !== -1; end = answerEnd(text, earlierEnd)) {
        if (earlierAnswered === earlier.length) return settle()
        earlierEnd = end
        earlierAnswered++
        if (options.earlier?.pipelined === false) {
          const next = earlier[earlierAnswered]
          if (next === undefined) sendHead()
          else socket.write(next)
        }
      }
    })
    socket.on('close', settle)
    socket.on('error', () => {})
  })
  socket.once('connect', () => {
    if (options.reads === false) socket.pause()
    if (earlier.length === 0) return sendHead()
    if (options.earlier?.pipelined === true) {
      for (const request of earlier) socket.write(request)
      return sendHead()
    }
    socket.write(earlier[0] as Buffer)
  })
  return { answered, closed, sent: () => sent, close: () => { clearInterval(timer); socket.destroy() }, read: () => { socket.resume() } }
}
