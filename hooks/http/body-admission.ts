import type { FastifyReply, FastifyRequest } from 'fastify'
import { HookError } from '../framework/errors.js'

/**
 * Memory for request bodies, and how long a body may hold it. No client can stall another this way:
 *
 * - The bodies held at once, arriving or not yet answered, take at most BODIES_HELD times HOOKS_BODY_LIMIT. A body
 *   with a Content-Length is read only once that much memory is set aside for it, so that bodies which arrive together
 *   never each hold a part and wait for one another; a chunked body is charged its bytes as they arrive.
 * - A body that does not fit waits, unread; the smallest waiting body goes first as memory frees, so that one large
 *   body does not hold up the small ones behind it.
 * - A body that has stalled (less than PROGRESS_BYTES over STALL_MS of the server's time) gives way, answered 408,
 *   when a waiting body needs its memory: a client that announces a large body and trickles it, or sends part of it
 *   and stops, cannot keep the memory from those that send theirs at once. A body that arrives at network speed
 *   never gives way.
 * - A body has HOOKS_BODY_TIMEOUT to arrive whole, from when it may be read; later it is answered 408, its connection
 *   closed, its bytes dropped. Time the server spent on other work, unable to read it (parsing a large body, say), is
 *   added back, up to another HOOKS_BODY_TIMEOUT: slow means the client was slow.
 * - Parsing waits for the body to have arrived, so no client's pace holds it; then at most HOOKS_BODY_LIMIT of bodies
 *   are parsed and answered at once, in arrival order (or one body alone), as parsing costs many times a body's bytes.
 * - Every wait for memory, to receive or to parse, lasts at most HOOKS_ADMISSION_TIMEOUT; then the call is answered
 *   503 with Retry-After, and Metacontroller retries it.
 */

/**
 * How many bodies at HOOKS_BODY_LIMIT may be held at once: at the default 16 MiB, 64 MiB of bytes beside the worst
 * parse, under the Deployment's memory limit (test/faults/body-memory.test.ts), and room for five of the largest real
 * requests (11 MB, a 2,000-pod parent), one per Metacontroller worker, to arrive together.
 */
export const BODIES_HELD = 4

/**
 * A body that received less than PROGRESS_BYTES over STALL_MS, not counting time the server could not read it, has
 * stalled. 16 KiB in 0.3 s is 53 KiB/s, a hundredth of what a body at HOOKS_BODY_LIMIT needs to arrive in
 * HOOKS_BODY_TIMEOUT; and a call that waits for a stalled body's memory waits no more than that.
 */
export const STALL_MS = 300
export const PROGRESS_BYTES = 16 * 1024

/** What a 503 asks the client to wait before it retries, in seconds. */
export const RETRY_AFTER_SECONDS = 1

export interface AdmissionBounds {
  /** HOOKS_BODY_LIMIT, in bytes. */
  limit: number
  /** HOOKS_BODY_TIMEOUT. */
  bodyTimeoutMs: number
  /** HOOKS_ADMISSION_TIMEOUT. */
  admissionTimeoutMs: number
}

/** The client closed its connection before its answer: nothing went wrong, and nobody is left to answer. */
export class ClientGone extends Error {
  constructor (readonly during: string) {
    super(`the client closed the connection ${during}`)
    this.name = 'ClientGone'
  }
}

/** What a body's reader is told: it must stop (with the error to answer), or it may go on once its bytes fit. */
export interface BodyReader {
  refuse: (error: Error) => void
  resume: () => void
}

const seconds = (ms: number): string => `${ms / 1000} s`

/**
 * How often the deadlines of bodies are checked, while any body arrives or waits, and the time the event loop was
 * blocked is measured (how late a check comes). One interval for all bodies: no timer per request.
 */
export const CHECK_INTERVAL_MS = 100

/** The memory shared by every body, and who waits for it. */
export class BodyAdmission {
  readonly capacity: number
  /** Bytes set aside for, or received of, the bodies not yet answered. */
  held = 0
  /** Bodies still arriving, or waiting to start, oldest first (a Set iterates in insertion order). */
  readonly arriving = new Set<BodyClaim>()
  /** Bodies that wait for room to start or to go on, in the order they asked. */
  readonly waitingForRoom: BodyClaim[] = []
  /** Bytes of the bodies being parsed and answered. */
  parsing = 0
  /** Bodies that have arrived and wait to be parsed, in the order they arrived. */
  readonly waitingToParse: BodyClaim[] = []
  /** Time the event loop was blocked, summed over the checks: how much later than CHECK_INTERVAL_MS each came. */
  stalledMs = 0
  private lastCheck = 0
  private checker: NodeJS.Timeout | undefined

  constructor (readonly bounds: AdmissionBounds) {
    this.capacity = BODIES_HELD * bounds.limit
  }

  /** Checks deadlines from now on, until no body arrives or waits. */
  watch (): void {
    if (this.checker !== undefined) return
    this.lastCheck = performance.now()
    this.checker = setInterval(() => { this.check() }, CHECK_INTERVAL_MS)
  }

  /** Refuses the bodies past their deadline: 408 for an arrival, 503 for a wait (each queue is in order of its deadline). */
  private check (): void {
    const now = performance.now()
    this.stalledMs += Math.max(0, now - this.lastCheck - CHECK_INTERVAL_MS)
    this.lastCheck = now
    for (const claim of this.arriving) claim.checkArrival(now)
    const { admissionTimeoutMs } = this.bounds
    for (let first = this.waitingForRoom[0]; first !== undefined && first.waitingSince + admissionTimeoutMs <= now; first = this.waitingForRoom[0]) first.notAdmitted('receive')
    for (let first = this.waitingToParse[0]; first !== undefined && first.waitingSince + admissionTimeoutMs <= now; first = this.waitingToParse[0]) first.notAdmitted('parse')
    // Bodies that were arriving when a waiting one asked may have stalled since.
    const smallest = this.smallestWaiting()
    if (smallest !== undefined && this.makeRoom(smallest, smallest.pending)) this.wake()
    if (this.arriving.size === 0 && this.waitingToParse.length === 0) {
      clearInterval(this.checker)
      this.checker = undefined
    }
  }

  /** A claim for one request's body, to be released once its answer is done or its connection closed. */
  claim (): BodyClaim {
    return new BodyClaim(this)
  }

  /** Whether `bytes` more fit once the bodies that stalled gave way, oldest first. */
  makeRoom (newcomer: BodyClaim, bytes: number): boolean {
    const now = performance.now()
    for (const other of this.arriving) {
      if (this.held + bytes <= this.capacity) break
      if (other !== newcomer && other.stalled(now)) other.giveWay()
    }
    return this.held + bytes <= this.capacity
  }

  private smallestWaiting (): BodyClaim | undefined {
    let smallest: BodyClaim | undefined
    for (const claim of this.waitingForRoom) if (smallest === undefined || claim.pending < smallest.pending) smallest = claim
    return smallest
  }

  /** Lets waiting bodies go on, the smallest first, while they fit. */
  wake (): void {
    for (let next = this.smallestWaiting(); next?.fitsNow() === true; next = this.smallestWaiting()) {
      this.waitingForRoom.splice(this.waitingForRoom.indexOf(next), 1)
      next.admitWaiting()
    }
    for (let next = this.waitingToParse[0]; next !== undefined && this.parseFits(next.bytes); next = this.waitingToParse[0]) {
      this.waitingToParse.shift()
      next.startParsing()
    }
  }

  /** A body of `bytes` may be parsed now: it fits within HOOKS_BODY_LIMIT beside those being parsed, or it is alone. */
  parseFits (bytes: number): boolean {
    return this.parsing === 0 || this.parsing + bytes <= this.bounds.limit
  }
}

type ClaimState = 'new' | 'arriving' | 'waiting for room' | 'arrived' | 'waiting to parse' | 'parsing' | 'released'

/** One body's claim on memory: from its first byte to its answer. */
export class BodyClaim {
  private state: ClaimState = 'new'
  /** Bytes received. */
  bytes = 0
  /** What the body holds of the memory: its Content-Length while it arrives, or the bytes received when more. */
  private charged = 0
  /** Memory the body waits for. */
  pending = 0
  /** Bytes received that wait for that memory. */
  private pendingBytes = 0
  /** Whether it waits to start: nothing read yet. */
  private waitingToStart = false
  private startedAt = 0
  /** When the body last received PROGRESS_BYTES, the admission's stalledMs then, and the bytes received since. */
  private progressAt = 0
  private stalledAtProgress = 0
  private sinceProgress = 0
  /** The admission's stalledMs when the body started arriving. */
  private stalledBefore = 0
  /** When the body started waiting for room or to be parsed. */
  waitingSince = 0
  private reader: BodyReader | undefined
  private parseWait: { resolve: () => void, reject: (error: Error) => void } | undefined

  constructor (private readonly admission: BodyAdmission) {}

  /**
   * The body of `announced` bytes (its Content-Length; 0 for a chunked body) starts arriving, with HOOKS_BODY_TIMEOUT
   * to arrive whole: true when its reader may read now; otherwise it waits for `resume` (or a refusal).
   */
  start (reader: BodyReader, announced: number): boolean {
    const { admission } = this
    this.reader = reader
    this.state = 'arriving'
    this.restartClock()
    admission.arriving.add(this)
    admission.watch()
    if (this.claimRoom(announced)) return true
    this.waitingToStart = true
    this.waitForRoom(announced, 0)
    return false
  }

  /** Charges `memory` more to the body if it fits, once stalled bodies gave way if need be. */
  private claimRoom (memory: number): boolean {
    const { admission } = this
    const fitted = admission.held + memory <= admission.capacity
    if (!fitted && !admission.makeRoom(this, memory)) return false
    admission.held += memory
    this.charged += memory
    // What the stalled bodies gave back beyond this memory goes to the bodies waiting.
    if (!fitted) admission.wake()
    return true
  }

  private restartClock (): void {
    this.startedAt = this.progressAt = performance.now()
    this.stalledBefore = this.stalledAtProgress = this.admission.stalledMs
    this.sinceProgress = 0
  }

  /** Arriving, and less than PROGRESS_BYTES over the last STALL_MS the server could read it. */
  stalled (now: number): boolean {
    if (this.state !== 'arriving' || this.charged === 0) return false
    return now - this.progressAt - (this.admission.stalledMs - this.stalledAtProgress) >= STALL_MS
  }

  private received (bytes: number): void {
    this.bytes += bytes
    this.sinceProgress += bytes
    if (this.sinceProgress < PROGRESS_BYTES) return
    this.progressAt = performance.now()
    this.stalledAtProgress = this.admission.stalledMs
    this.sinceProgress = 0
  }

  /** Refused (408) once HOOKS_BODY_TIMEOUT has passed, plus the time the server could not read it, up to as much again. */
  checkArrival (now: number): void {
    const { bodyTimeoutMs } = this.admission.bounds
    const stalled = Math.min(bodyTimeoutMs, this.admission.stalledMs - this.stalledBefore)
    if (now < this.startedAt + bodyTimeoutMs + stalled) return
    this.refuse(new HookError(408, `request body did not arrive within HOOKS_BODY_TIMEOUT (${seconds(bodyTimeoutMs)}): ` +
      'send the whole body at once, or raise HOOKS_BODY_TIMEOUT on the hook server if its network is that slow'))
  }

  /** Waited longer than HOOKS_ADMISSION_TIMEOUT for memory: 503. */
  notAdmitted (purpose: 'receive' | 'parse'): void {
    const { admissionTimeoutMs } = this.admission.bounds
    const error = new HookError(503, `no memory to ${purpose} the request body within HOOKS_ADMISSION_TIMEOUT (${seconds(admissionTimeoutMs)}): ` +
      `${purpose === 'receive' ? 'the bodies of other calls hold it' : 'other bodies are being parsed'}; retry in ${RETRY_AFTER_SECONDS} s (Metacontroller retries by itself)`)
    if (purpose === 'receive') return this.refuse(error)
    const wait = this.parseWait
    this.parseWait = undefined
    this.release()
    wait?.reject(error)
  }

  /** `bytes` just received: true when they fit; otherwise the reader waits for `resume` (or a refusal). */
  take (bytes: number): boolean {
    // Released: its connection closed, and its reader is about to hear of it.
    if (this.state === 'released') return false
    const more = Math.max(0, this.bytes + bytes - this.charged)
    if (this.claimRoom(more)) {
      this.received(bytes)
      return true
    }
    this.waitForRoom(more, bytes)
    return false
  }

  private waitForRoom (memory: number, bytes: number): void {
    this.pending = memory
    this.pendingBytes = bytes
    this.state = 'waiting for room'
    this.waitingSince = performance.now()
    this.admission.waitingForRoom.push(this)
  }

  fitsNow (): boolean {
    return this.admission.held + this.pending <= this.admission.capacity
  }

  admitWaiting (): void {
    this.admission.held += this.pending
    this.charged += this.pending
    this.state = 'arriving'
    if (this.waitingToStart) this.restartClock()
    else this.received(this.pendingBytes)
    this.waitingToStart = false
    this.pending = this.pendingBytes = 0
    this.reader?.resume()
  }

  /** A waiting body needs the room, and this one has stalled: it is answered 408. */
  giveWay (): void {
    const arrivingFor = ((performance.now() - this.startedAt) / 1000).toFixed(1)
    this.free()
    this.reader?.refuse(new HookError(408, `request body stalled (under ${PROGRESS_BYTES / 1024} KiB in ${STALL_MS / 1000} s) after ${arrivingFor} s ` +
      `while other calls waited for the memory it held (${BODIES_HELD} bodies of HOOKS_BODY_LIMIT at most): send the whole body at once, then retry`))
  }

  /** The whole body is in: it holds its bytes from now on, no more. */
  arrived (): void {
    const { admission } = this
    admission.arriving.delete(this)
    this.state = 'arrived'
    if (this.charged > this.bytes) {
      admission.held -= this.charged - this.bytes
      this.charged = this.bytes
      admission.wake()
    }
  }

  /** Waits until the body may be parsed; 503 after HOOKS_ADMISSION_TIMEOUT, ClientGone if the connection closes first. */
  async parse (): Promise<void> {
    const { admission } = this
    if (this.state === 'released') throw new ClientGone('while it waited for memory to parse its body')
    if (admission.waitingToParse.length === 0 && admission.parseFits(this.bytes)) {
      this.startParsing()
      return
    }
    this.state = 'waiting to parse'
    this.waitingSince = performance.now()
    admission.waitingToParse.push(this)
    admission.watch()
    await new Promise<void>((resolve, reject) => { this.parseWait = { resolve, reject } })
  }

  startParsing (): void {
    this.admission.parsing += this.bytes
    this.state = 'parsing'
    this.parseWait?.resolve()
  }

  /**
   * Gives back everything the body holds: once its answer is done or its connection closed (the response's `close`
   * covers both), or when it is refused. Any number of calls.
   */
  readonly release = (): void => {
    if (this.state === 'released') return
    this.free()
    this.admission.wake()
  }

  private free (): void {
    const { admission, state } = this
    this.state = 'released'
    admission.held -= this.charged
    if (state === 'parsing') admission.parsing -= this.bytes
    if (state === 'arriving' || state === 'waiting for room') admission.arriving.delete(this)
    if (state === 'waiting for room') admission.waitingForRoom.splice(admission.waitingForRoom.indexOf(this), 1)
    if (state === 'waiting to parse') {
      admission.waitingToParse.splice(admission.waitingToParse.indexOf(this), 1)
      this.parseWait?.reject(new ClientGone('while it waited for memory to parse its body'))
    }
  }

  private refuse (error: HookError): void {
    this.release()
    this.reader?.refuse(error)
  }
}

/** How long a connection whose body was cut short stays open, half-closed, after its answer: see `closeAfterAnswer`. */
export const LINGER_MS = 1000

/**
 * What a refusal of a body (408, 503) needs besides its answer: a 503 says when to retry; a body cut short leaves its
 * connection unusable, so it is closed once answered.
 */
export function prepareRefusal (request: FastifyRequest, reply: FastifyReply, error: unknown, bodyComplete: boolean): void {
  if (!(error instanceof HookError) || (error.statusCode !== 408 && error.statusCode !== 503)) return
  if (error.statusCode === 503) reply.header('retry-after', String(RETRY_AFTER_SECONDS))
  if (!bodyComplete) reply.raw.once('finish', () => { closeAfterAnswer(request) })
}

/**
 * Closes a connection whose request body is still arriving, in stages, so that the client reads its answer: the
 * answer is followed by the end of what the server sends, the client's remaining bytes are read and dropped, and the
 * connection is destroyed when the client closes it or after LINGER_MS. Closed at once (as `Connection: close` makes
 * Node.js do), unread bytes turn the close into a reset, and a client that is still writing may lose the answer: in
 * two runs of the slow-client fault test, 22 and 2 of 200 trickling clients did.
 */
function closeAfterAnswer (request: FastifyRequest): void {
  const { socket } = request.raw
  request.raw.resume()
  socket.end()
  setTimeout(() => { socket.destroy() }, LINGER_MS).unref()
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The request body's claim on memory, once its reading started. */
    bodyClaim: BodyClaim | null
  }
}

/**
 * The `preParsing` hook that waits for memory to parse a body that has arrived (see BodyAdmission); a client that goes
 * away meanwhile is `clientGone`'s.
 */
export function parseAdmission (clientGone: (request: FastifyRequest, reply: FastifyReply, error: ClientGone) => void) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    try {
      await request.bodyClaim?.parse()
    } catch (error) {
      if (error instanceof ClientGone) return clientGone(request, reply, error)
      prepareRefusal(request, reply, error, true)
      throw error
    }
  }
}
