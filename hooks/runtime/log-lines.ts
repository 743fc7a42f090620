import { writeSync } from 'node:fs'

/**
 * The destination of the server's log lines: stdout, written synchronously, but a batch at a time: the lines of up
 * to `delayMs` (or `batchBytes`) together. A write per line cost more CPU than the log line itself when stdout is a
 * pipe (as under a container runtime), because each write wakes the reader; pino's asynchronous destination cost
 * more still (a thread-pool round trip per line). A line waits at most `delayMs`; what is left is written when the
 * process exits, also on process.exit() and on a crash.
 */
export class LogLines {
  private lines: string[] = []
  private bytes = 0
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly fd: number, private readonly delayMs = 50, private readonly batchBytes = 64 * 1024) {
    process.on('exit', () => { this.flush() })
  }

  write (line: string): void {
    this.lines.push(line)
    this.bytes += line.length
    if (this.bytes >= this.batchBytes) this.flush()
    else this.timer ??= setTimeout(() => { this.flush() }, this.delayMs).unref()
  }

  flush (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.lines.length === 0) return
    const text = this.lines.join('')
    this.lines = []
    this.bytes = 0
    writeSync(this.fd, text)
  }
}
