import type { AdmissionClock } from '../../hooks/http/hook-call.js'

/**
 * Time that passes only when a test says so, for the admission of bodies (hooks/http/body-admission.ts): `clock`
 * for the scheduler and the app, whose ticker runs when `advance` passes its interval. The server is idle while time
 * passes, unless `advance` says it is busy.
 */
export class FakeClock {
  time = 0
  idleTime = 0
  private readonly tickers = new Set<{ ms: number, next: number, run: () => void }>()
  private started: (() => void) | undefined

  readonly clock: AdmissionClock = {
    now: () => this.time,
    idle: () => this.idleTime,
    every: (ms, run) => {
      const ticker = { ms, next: this.time + ms, run }
      this.tickers.add(ticker)
      this.started?.()
      return () => { this.tickers.delete(ticker) }
    }
  }

  /** Whether something ticks. */
  get ticking (): boolean {
    return this.tickers.size > 0
  }

  /** Resolves once something ticks: the app has a call in its admission. */
  async whenTicking (): Promise<void> {
    if (this.ticking) return
    await new Promise<void>((resolve) => { this.started = resolve })
    this.started = undefined
  }

  /**
   * Moves time on by `ms`, running each ticker at each of its times on the way. `busy`: the server was too busy to
   * run them, or to read or write, meanwhile: its idle time stands still, and the tickers run once, at the end.
   */
  advance (ms: number, busy = false): void {
    const until = this.time + ms
    if (busy) {
      this.time = until
      for (const ticker of [...this.tickers]) {
        ticker.next = until + ticker.ms
        ticker.run()
      }
      return
    }
    for (;;) {
      const due = [...this.tickers].filter((ticker) => ticker.next <= until).sort((a, b) => a.next - b.next)[0]
      if (due === undefined) break
      this.idleTime += due.next - this.time
      this.time = due.next
      due.next += due.ms
      due.run()
    }
    this.idleTime += until - this.time
    this.time = until
  }
}
