import { HookError } from '../framework/errors.js'
import { WEBHOOK_TIMEOUT_SECONDS } from '../framework/wire/webhook.js'

/**
 * Who may use the memory for hook calls, and who waits or gives way: a scheduler with no timer, socket or clock of
 * its own. It reads the time, and the time the server sat idle, from the clock it is given; each event returns what
 * must happen (effects), which hook-call.ts carries out. The bounds it keeps:
 *
 * - Memory: the bodies being received or not yet parsed, and the answers not yet taken by their clients, hold at most
 *   BODIES_HELD times HOOKS_BODY_LIMIT. A body with a Content-Length is read once that much is set aside for it, so
 *   that bodies arriving together never each hold a part and wait for one another; a chunked body is charged its
 *   bytes as they arrive. A call that does not fit waits, unread; as memory frees, the smallest waiting call goes
 *   first. An answer is charged once built, whatever is free (it exists already), until its client has taken it.
 * - Giving way: a transfer that is late, a body still arriving or an answer not yet taken, gives way when a waiting
 *   call that needs less than it holds needs its memory: the body is answered 408, the answer's connection closed.
 *   Giving way to a call as large would only trade one large transfer for another. Late is stalled (under
 *   PROGRESS_BYTES in the last STALL_MS) or, for a body with a Content-Length and for an answer, behind the pace that
 *   ends it within HOOKS_BODY_TIMEOUT, after STALL_MS of grace. Both are counted in the time the server sat idle,
 *   waiting for bytes to read or room to write: time it spent on other work (a long parse) is no client's delay. A
 *   transfer at network speed is never late.
 * - Time: a body has HOOKS_BODY_TIMEOUT to arrive from when it may be read (then 408), an answer as long to be taken
 *   (then its connection is closed). Time the server was busy meanwhile is added back: all of it for a body, which a
 *   server busy parsing others reads only between parses, up to as much again for an answer; but a body still
 *   arriving HOOKS_ADMISSION_TIMEOUT plus HOOKS_BODY_TIMEOUT after its call's arrival, or the webhook timeout if that
 *   comes first, gets 503 then (the server, not the client, took the time), so that every call is answered within
 *   that bound.
 * - Parsing: a body is parsed once it has arrived, and HOOKS_BODY_LIMIT of bodies at most are parsed and answered at
 *   once (any body alone), the first that fits in arrival order, as parsing costs many times a body's bytes. Bodies of
 *   at most SMALL_BYTES may go RESERVE of the limit beyond it, so that a small call is parsed beside a large one.
 * - Answering: before its answer is built, a call sets aside the bytes its controller says the answer may take (a
 *   small request can ask for a large answer), beyond those its body holds, up to HOOKS_BODY_LIMIT; the first that
 *   fits in arrival order goes. The last RESERVE of the memory is kept for answers that add at most SMALL_BYTES,
 *   so that large answers never hold up every small call; an answer that fits nowhere is built anyway when no other
 *   answer is being built. A body's memory and its share of parsing are given back once its answer is built.
 * - Waiting: a call still waiting, for memory, to be parsed or to build its answer, HOOKS_ADMISSION_TIMEOUT after its
 *   arrival is answered 503 with Retry-After.
 */

/**
 * How many bodies at HOOKS_BODY_LIMIT may be held at once: at the default 16 MiB, 64 MiB of bytes beside the worst
 * parse, under the Deployment's memory limit (test/faults/body-memory.test.ts), and room for five of the largest real
 * requests (11 MB, a 2,000-pod parent), one per Metacontroller worker, to arrive together.
 */
export const BODIES_HELD = 4

/**
 * A transfer that moved less than PROGRESS_BYTES over STALL_MS of the time the server could move it has stalled.
 * 16 KiB in 0.3 s is 53 KiB/s, a hundredth of what a body at HOOKS_BODY_LIMIT needs to arrive in HOOKS_BODY_TIMEOUT.
 */
export const STALL_MS = 300
export const PROGRESS_BYTES = 16 * 1024

/**
 * What is kept for small calls, those whose body or answer takes at most SMALL_BYTES: the last eighth of the memory
 * for their answers (at the default limit, 8 MiB, room for sixteen beside large answers that fill the rest), and an
 * eighth of HOOKS_BODY_LIMIT beyond it for their parses (without it, a small body waited for every body at the limit
 * that arrived before it to be parsed and answered, over 1 s behind four).
 */
export const RESERVE = 1 / 8
export const SMALL_BYTES = 512 * 1024

/** How often `tick` is to be called while there are calls, to check deadlines. */
export const TICK_MS = 100

/** What a 503 asks the client to wait before it retries, in seconds. */
export const RETRY_AFTER_SECONDS = 1

/** The scheduler's clock, in milliseconds. */
export interface SchedulerClock {
  now: () => number
  /** The time the server sat idle, waiting for I/O, since some fixed moment: the event loop's idle time. */
  idle: () => number
}

export interface AdmissionBounds {
  /** HOOKS_BODY_LIMIT, in bytes. */
  limit: number
  /** HOOKS_BODY_TIMEOUT. */
  bodyTimeoutMs: number
  /** HOOKS_ADMISSION_TIMEOUT. */
  admissionTimeoutMs: number
}

/**
 * Where a call is: waiting for memory (to start reading, or for a chunk already received), its body arriving, arrived,
 * waiting to be parsed, being parsed, waiting for memory to build its answer, building it, its answer being taken,
 * refused (holding nothing more, its refusal to be answered), or ended.
 */
export type Phase = 'waiting' | 'reading' | 'arrived' | 'queued to parse' | 'parsing' | 'queued to answer' | 'answering' | 'sending' | 'refused' | 'ended'

/** What the scheduler decided about a call. */
export type Effect<C extends Call = Call> =
  /** Its body may be read now, or read on: the chunk it waited with is charged. */
  | { call: C, action: 'read' }
  /** Its body may be parsed now. */
  | { call: C, action: 'parse' }
  /** Its answer may be built now. */
  | { call: C, action: 'answer' }
  /** Answer it with `error` (408, 503): it holds nothing more. */
  | { call: C, action: 'refuse', error: HookError }
  /** Its answer was not taken in time: close its connection. */
  | { call: C, action: 'close', reason: string }

/** A body's arrival, or an answer's taking: how much moved, and when, on the wall clock and in idle time. */
interface Transfer {
  /** Its size when known: a Content-Length, an answer's bytes. */
  size: number | undefined
  startedAt: number
  startedIdle: number
  done: number
  /** Bytes moved since it last moved PROGRESS_BYTES, and when (idle time) that was. */
  sinceMark: number
  markedAt: number
}

/** One hook call, from its headers to the end of its answer; its fields are the scheduler's to change. */
export class Call {
  phase: Phase = 'waiting'
  /** When its headers arrived. */
  openedAt = 0
  /** Body bytes received. */
  received = 0
  /**
   * Memory it holds: its Content-Length, or the bytes it received, while its body arrives and waits to be answered;
   * then its answer's bytes not taken yet.
   */
  charged = 0
  /**
   * Memory it waits for: in phase `waiting`, its Content-Length to start, or room for the chunk it received; in phase
   * `queued to answer`, what its answer may take beyond what it holds.
   */
  need = 0
  /** The bytes of the chunk it waits with (0: it waits to start). */
  pendingBytes = 0
  /** Its body's arrival, then its answer's taking. */
  transfer: Transfer | undefined

  /** `announced`: the Content-Length, undefined for a chunked body. */
  constructor (readonly announced: number | undefined) {}
}

/** The phases of a call whose body is parsed (or being parsed) and its answer not yet built. */
const PARSED: ReadonlySet<Phase> = new Set(['parsing', 'queued to answer', 'answering'])

/** The phases of a call that waits for the scheduler: for memory to read its body, for its turn to parse or to answer. */
const QUEUED: ReadonlySet<Phase> = new Set(['waiting', 'queued to parse', 'queued to answer'])

/** What a call in each phase that waits waits for, and why, as its 503 says. */
const WAITS: Partial<Record<Phase, [string, string]>> = {
  waiting: ['receive the request body', 'the bodies and answers of other calls hold it'],
  'queued to parse': ['parse the request body', 'other bodies are being parsed'],
  'queued to answer': ['build the answer its spec asks for', 'the bodies and answers of other calls hold it']
}

const seconds = (ms: number): string => `${ms / 1000} s`
const roundSeconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

export class BodyAdmission<C extends Call = Call> {
  /** BODIES_HELD times HOOKS_BODY_LIMIT. */
  readonly capacity: number
  /** Memory held by every call: the sum of their `charged`. */
  held = 0
  /** Bytes of the bodies being parsed and answered. */
  parsing = 0
  /** How many answers are being built. */
  answering = 0
  /**
   * The calls not ended, in the order they arrived. An array, not a Set: with a Set, every call that waited (for the
   * database, a timer, a turn) outlived the young generation, and all it had allocated with it, kept reachable for the
   * young-generation collector by the Set's promoted table until the next full collection (a PostgresWriter create at
   * 5 connections: 6-7 ms a scavenge, against under 1 ms).
   */
  private readonly notEnded: C[] = []
  /** How many of them are in a QUEUED phase: when none is, an event has nothing to settle. */
  private queued = 0

  constructor (readonly bounds: AdmissionBounds, private readonly clock: SchedulerClock) {
    this.capacity = BODIES_HELD * bounds.limit
  }

  /** The calls not ended, in the order they arrived. */
  get calls (): readonly C[] {
    return this.notEnded
  }

  /** A call whose headers have arrived: it may read at once (effect `read`), or waits for its Content-Length to fit. */
  open (call: C): Array<Effect<C>> {
    this.notEnded.push(call)
    if (QUEUED.has(call.phase)) this.queued++
    call.openedAt = this.clock.now()
    call.need = call.announced ?? 0
    return this.settle([])
  }

  /**
   * `bytes` of the call's body have arrived. A chunked body that has no room for them waits (phase `waiting`), unread,
   * until an effect `read` says they are charged.
   */
  received (call: C, bytes: number): Array<Effect<C>> {
    if (call.phase !== 'reading') return []
    const more = Math.max(0, call.received + bytes - call.charged)
    if (more > 0 && this.held + more > this.capacity) {
      this.enter(call, 'waiting')
      call.need = more
      call.pendingBytes = bytes
      return this.settle([])
    }
    this.charge(call, more)
    this.move(call, bytes)
    return []
  }

  /** The whole body is in: the call holds its bytes from now on, no more. */
  arrived (call: C): Array<Effect<C>> {
    if (call.phase !== 'reading') return []
    this.enter(call, 'arrived')
    call.transfer = undefined
    this.charge(call, call.received - call.charged)
    return this.settle([])
  }

  /** The call asks to be parsed: at once (effect `parse`) when its bytes fit beside those being parsed, else in turn. */
  parse (call: C): Array<Effect<C>> {
    if (call.phase !== 'arrived') return []
    this.enter(call, 'queued to parse')
    return this.settle([])
  }

  /**
   * The call is parsed and asks to build an answer that may take `bytes`: at once (effect `answer`) when they fit,
   * else in turn. It keeps its share of parsing, as its parsed body lives until its answer is built.
   */
  answer (call: C, bytes: number): Array<Effect<C>> {
    if (call.phase !== 'parsing') return []
    this.enter(call, 'queued to answer')
    call.need = Math.max(0, Math.min(bytes, this.bounds.limit) - call.charged)
    return this.settle([])
  }

  /**
   * The call's answer is built and handed to its connection: its body, its share of parsing and the memory set aside
   * for its answer are given back, and its answer's `bytes` are charged until its client has taken them (`taken`).
   */
  answered (call: C, bytes: number): Array<Effect<C>> {
    if (call.phase === 'ended' || call.phase === 'sending') return []
    this.release(call)
    this.charge(call, bytes)
    this.enter(call, 'sending')
    call.transfer = this.transfer(bytes)
    return this.settle([])
  }

  /** The call's client took `bytes` more of its answer. */
  taken (call: C, bytes: number): Array<Effect<C>> {
    if (call.phase !== 'sending') return []
    this.charge(call, -Math.min(bytes, call.charged))
    this.move(call, bytes)
    return this.settle([])
  }

  /** The call is over: its answer taken, or its connection closed. Any number of times. */
  end (call: C): Array<Effect<C>> {
    if (call.phase === 'ended') return []
    this.release(call)
    this.enter(call, 'ended')
    this.forget(call)
    return this.settle([])
  }

  /** Called every TICK_MS while there are calls: refuses what is past its deadline, and lets late transfers give way. */
  tick (): Array<Effect<C>> {
    const now = this.clock.now()
    const effects: Array<Effect<C>> = []
    const { bodyTimeoutMs, admissionTimeoutMs } = this.bounds
    const arrivingBoundMs = Math.min(admissionTimeoutMs + bodyTimeoutMs, WEBHOOK_TIMEOUT_SECONDS * 1000)
    // Over a copy: a call it closes leaves the list.
    for (const call of [...this.notEnded]) {
      const overdue = call.transfer !== undefined && this.overdue(call.transfer, now, call.phase === 'reading' ? Number.POSITIVE_INFINITY : bodyTimeoutMs)
      // A body gets HOOKS_BODY_TIMEOUT of the server's idle time to arrive, within its call's bound.
      if (call.phase === 'reading' && overdue) {
        this.refuse(call, effects, new HookError(408, `request body did not arrive within HOOKS_BODY_TIMEOUT (${seconds(bodyTimeoutMs)}): ` +
          'send the whole body at once, or raise HOOKS_BODY_TIMEOUT on the hook server if its network is that slow'))
      } else if (call.phase === 'reading' && now - call.openedAt >= arrivingBoundMs) {
        this.refuse(call, effects, this.outOfTime(call, now, arrivingBoundMs))
      } else if (call.phase === 'sending' && call.charged > 0 && overdue) {
        this.close(call, effects, `its client did not take its answer within HOOKS_BODY_TIMEOUT (${seconds(bodyTimeoutMs)})`)
      } else if (WAITS[call.phase] !== undefined && now - call.openedAt >= admissionTimeoutMs) {
        const [what, why] = WAITS[call.phase] ?? []
        this.refuse(call, effects, new HookError(503, `no memory to ${what} within HOOKS_ADMISSION_TIMEOUT (${seconds(admissionTimeoutMs)}) ` +
          `of its arrival: ${why}; retry in ${RETRY_AFTER_SECONDS} s (Metacontroller retries by itself)`))
      }
    }
    return this.settle(effects)
  }

  /**
   * The refusal of a body still arriving at its call's bound without being late: the time went on waiting for memory
   * and on other calls' work, not on the client's pace.
   */
  private outOfTime (call: C, now: number, boundMs: number): HookError {
    const transfer = call.transfer
    const readingMs = transfer === undefined ? 0 : now - transfer.startedAt
    const busyMs = transfer === undefined ? 0 : readingMs - (this.clock.idle() - transfer.startedIdle)
    return new HookError(503, `request body still arriving ${seconds(boundMs)} after the call came, the most a call may take ` +
      `(HOOKS_ADMISSION_TIMEOUT plus HOOKS_BODY_TIMEOUT, within Metacontroller's ${WEBHOOK_TIMEOUT_SECONDS} s): the server was too busy to read it, ` +
      `having kept it waiting ${roundSeconds(now - call.openedAt - readingMs)} for memory, then spent ${roundSeconds(busyMs)} of the ` +
      `${roundSeconds(readingMs)} since on other calls; retry in ${RETRY_AFTER_SECONDS} s (Metacontroller retries by itself)`)
  }

  private transfer (size: number | undefined): Transfer {
    const idle = this.clock.idle()
    return { size, startedAt: this.clock.now(), startedIdle: idle, done: 0, sinceMark: 0, markedAt: idle }
  }

  private move (call: C, bytes: number): void {
    if (call.phase === 'reading') call.received += bytes
    const transfer = call.transfer
    if (transfer === undefined) return
    transfer.done += bytes
    transfer.sinceMark += bytes
    if (transfer.sinceMark < PROGRESS_BYTES) return
    transfer.sinceMark = 0
    transfer.markedAt = this.clock.idle()
  }

  /** HOOKS_BODY_TIMEOUT has passed since the transfer started, plus the time the server was busy since, up to `busyAddedMs`. */
  private overdue (transfer: Transfer, now: number, busyAddedMs: number): boolean {
    const { bodyTimeoutMs } = this.bounds
    const elapsed = now - transfer.startedAt
    const busy = elapsed - (this.clock.idle() - transfer.startedIdle)
    return elapsed >= bodyTimeoutMs + Math.min(busyAddedMs, busy)
  }

  /**
   * Stalled, or behind the pace that ends it HOOKS_BODY_TIMEOUT after it started (when its size is known), after
   * STALL_MS of grace; in idle time.
   */
  private late (transfer: Transfer): boolean {
    if (transfer.size !== undefined && transfer.done >= transfer.size) return false
    const idle = this.clock.idle()
    if (idle - transfer.markedAt >= STALL_MS) return true
    return transfer.size !== undefined && transfer.done < transfer.size * (idle - transfer.startedIdle - STALL_MS) / this.bounds.bodyTimeoutMs
  }

  /** Moves `call` to `phase`, counting the calls in a QUEUED phase. */
  private enter (call: C, phase: Phase): void {
    if (this.notEnded.includes(call)) this.queued += Number(QUEUED.has(phase)) - Number(QUEUED.has(call.phase))
    call.phase = phase
  }

  private forget (call: C): void {
    const index = this.notEnded.indexOf(call)
    if (index !== -1) this.notEnded.splice(index, 1)
  }

  private charge (call: C, bytes: number): void {
    call.charged += bytes
    this.held += bytes
  }

  /** Gives back the call's memory and its share of parsing. */
  private release (call: C): void {
    if (PARSED.has(call.phase)) this.parsing -= call.received
    if (call.phase === 'answering') this.answering--
    this.charge(call, -call.charged)
    call.transfer = undefined
    call.need = call.pendingBytes = 0
  }

  private refuse (call: C, effects: Array<Effect<C>>, error: HookError): void {
    this.release(call)
    this.enter(call, 'refused')
    effects.push({ call, action: 'refuse', error })
  }

  private close (call: C, effects: Array<Effect<C>>, reason: string): void {
    this.release(call)
    this.enter(call, 'ended')
    this.forget(call)
    effects.push({ call, action: 'close', reason })
  }

  /**
   * Lets waiting calls read, the smallest first, making room from late transfers; then starts the answers and the
   * parses that fit, in arrival order.
   */
  private settle (effects: Array<Effect<C>>): Array<Effect<C>> {
    if (this.queued === 0) return effects
    for (let next = this.smallestWaiting(); next !== undefined; next = this.smallestWaiting()) {
      if (this.held + next.need > this.capacity && !this.makeRoom(next.need, effects)) break
      this.admit(next, effects)
    }
    for (const call of this.notEnded) {
      if (call.phase === 'queued to answer' && this.answerFits(call.need)) {
        this.charge(call, call.need)
        call.need = 0
        this.enter(call, 'answering')
        this.answering++
        effects.push({ call, action: 'answer' })
      } else if (call.phase === 'queued to parse' && this.parseFits(call.received)) {
        this.enter(call, 'parsing')
        this.parsing += call.received
        effects.push({ call, action: 'parse' })
      }
    }
    return effects
  }

  /** Whether an answer adding `need` may be built: see RESERVE. */
  private answerFits (need: number): boolean {
    const room = need <= SMALL_BYTES ? this.capacity : this.capacity * (1 - RESERVE)
    return this.held + need <= room || this.answering === 0
  }

  /** Whether a body of `bytes` may be parsed beside those being parsed: see RESERVE. */
  private parseFits (bytes: number): boolean {
    const room = bytes <= SMALL_BYTES ? this.bounds.limit * (1 + RESERVE) : this.bounds.limit
    return this.parsing + bytes <= room || this.parsing === 0
  }

  private smallestWaiting (): C | undefined {
    let smallest: C | undefined
    for (const call of this.notEnded) if (call.phase === 'waiting' && (smallest === undefined || call.need < smallest.need)) smallest = call
    return smallest
  }

  private admit (call: C, effects: Array<Effect<C>>): void {
    this.charge(call, call.need)
    this.enter(call, 'reading')
    if (call.pendingBytes === 0) call.transfer = this.transfer(call.announced)
    else this.move(call, call.pendingBytes)
    call.need = call.pendingBytes = 0
    effects.push({ call, action: 'read' })
  }

  /**
   * Whether the late transfers that hold more than `need` hold what it lacks; if so, they give way, the oldest first,
   * until it fits.
   */
  private makeRoom (need: number, effects: Array<Effect<C>>): boolean {
    const late = this.notEnded.filter((call) => call.charged > need && (call.phase === 'reading' || call.phase === 'sending') &&
      call.transfer !== undefined && this.late(call.transfer))
    if (this.held - late.reduce((sum, call) => sum + call.charged, 0) + need > this.capacity) return false
    const { bodyTimeoutMs } = this.bounds
    for (const call of late) {
      if (this.held + need <= this.capacity) break
      if (call.phase === 'sending') {
        this.close(call, effects, `its client took under ${PROGRESS_BYTES / 1024} KiB of its answer in ${STALL_MS / 1000} s, or too little to take it ` +
          `within HOOKS_BODY_TIMEOUT (${seconds(bodyTimeoutMs)}), while other calls waited for the memory it held`)
      } else {
        this.refuse(call, effects, new HookError(408, `request body arrived too slowly (under ${PROGRESS_BYTES / 1024} KiB in ${STALL_MS / 1000} s, ` +
          `or too little to arrive within HOOKS_BODY_TIMEOUT, ${seconds(bodyTimeoutMs)}) while other calls waited for the memory it held: ` +
          'send the whole body at once, then retry'))
      }
    }
    return true
  }
}
