import { writeSync } from 'node:fs'

/** The most bytes a UTF-16 code unit takes in UTF-8. */
const MAX_UTF8_BYTES_PER_UNIT = 3

/**
 * The destination of the server's log lines: stdout, written synchronously, but a batch at a time: the lines of up
 * to `delayMs` (or `batchBytes`) together. A write per line cost more CPU than the log line itself when stdout is a
 * pipe (as under a container runtime), because each write wakes the reader; pino's asynchronous destination cost
 * more still (a thread-pool round trip per line). A line waits at most `delayMs`; what is left is written when the
 * process exits, also on process.exit() and on a crash.
 *
 * The batch holds the lines' bytes, copied as each line comes, not the lines: a line is a string of many pieces as
 * pino builds it, and held for `delayMs` it would outlive two young-generation collections and be moved into the old
 * generation, which would then need a full collection about every second at 3,000 calls a second.
 */
export class LogLines {
  private readonly batch: Buffer
  private length = 0
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly fd: number, private readonly delayMs = 50, batchBytes = 64 * 1024) {
    this.batch = Buffer.allocUnsafeSlow(batchBytes)
    process.on('exit', () => { this.flush() })
  }

  write (line: string): void {
    // Room for the line at its longest in UTF-8, so that it is never cut; a line longer than the batch goes alone.
    const longest = line.length * MAX_UTF8_BYTES_PER_UNIT
    if (this.length + longest > this.batch.length) {
      this.flush()
      if (longest > this.batch.length) {
        const bytes = Buffer.from(line)
        this.writeAll(bytes, bytes.length)
        return
      }
    }
    this.length += this.batch.write(line, this.length)
    this.timer ??= setTimeout(() => { this.flush() }, this.delayMs).unref()
  }

  flush (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.length === 0) return
    const length = this.length
    this.length = 0
    this.writeAll(this.batch, length)
  }

  /** The first `length` bytes of `bytes`, written whole: a write to a pipe may take only part of them. */
  private writeAll (bytes: Buffer, length: number): void {
    let written = 0
    while (written < length) written += writeSync(this.fd, bytes, written, length - written)
  }
}
