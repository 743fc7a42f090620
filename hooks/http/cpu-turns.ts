/**
 * Who gets the CPU next among the calls ready to take a step (parse a body, run a hook, send an answer): one step per
 * turn of the event loop, so that the connections are read between steps, and the lightest step first, weighed by
 * the bytes it works on, so that a small call never waits behind a queue of large ones. A waiting step's weight halves
 * every AGING_MS, so that a large one steps in time however many small ones keep coming.
 */

/**
 * A step lighter than this runs at once when no other step waits: it takes a few milliseconds at most, less than
 * turns cost it, as they keep its garbage alive for the young generation to copy: five 100-pod syncs at once took
 * 22 % more CPU a call when their steps waited for turns.
 */
export const LIGHT_STEP_BYTES = 1024 * 1024

/** How long a waiting step takes to weigh half as much. */
export const AGING_MS = 1000

interface Waiting {
  weight: number
  since: number
  go: () => void
}

export class CpuTurns {
  private readonly waiting: Waiting[] = []
  private scheduled = false

  constructor (private readonly now: () => number = () => performance.now()) {}

  /** Resolves when a step weighing `weight` bytes may run; undefined when it may run now. */
  turn (weight: number): Promise<void> | undefined {
    if (this.runsAtOnce(weight)) return undefined
    return new Promise((resolve) => {
      this.waiting.push({ weight, since: this.now(), go: resolve })
      this.schedule()
    })
  }

  /** Whether a step weighing `weight` bytes would run now: `turn` would answer undefined. */
  runsAtOnce (weight: number): boolean {
    return weight < LIGHT_STEP_BYTES && this.waiting.length === 0 && !this.scheduled
  }

  /** How many steps wait for their turn. */
  get queued (): number {
    return this.waiting.length
  }

  private schedule (): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.next()?.go()
      if (this.waiting.length > 0) this.schedule()
    })
  }

  /** Takes the waiting step of least weight, as aged. */
  private next (): Waiting | undefined {
    const now = this.now()
    let best = -1
    let bestWeight = Number.POSITIVE_INFINITY
    for (let index = 0; index < this.waiting.length; index++) {
      const step = this.waiting[index] as Waiting
      const aged = step.weight / 2 ** ((now - step.since) / AGING_MS)
      if (aged < bestWeight) {
        best = index
        bestWeight = aged
      }
    }
    return best === -1 ? undefined : this.waiting.splice(best, 1)[0]
  }
}
