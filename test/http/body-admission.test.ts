import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { BODIES_HELD, BodyAdmission, Call, PROGRESS_BYTES, STALL_MS, TICK_MS, type AdmissionBounds, type Effect, type Phase } from '../../hooks/http/body-admission.js'
import { FakeClock } from '../helpers/fake-clock.js'

/**
 * hooks/http/body-admission.ts, on a fake clock: memory set aside for a Content-Length before a body is read, chunked
 * bodies charged the bytes they sent, late transfers giving way to waiting calls, parsing a body limit's worth at a
 * time, answers charged until taken, and every wait bounded; then the same properties over random interleavings.
 */

const LIMIT = 1024 * 1024
const CAPACITY = BODIES_HELD * LIMIT
const BOUNDS: AdmissionBounds = { limit: LIMIT, bodyTimeoutMs: 3000, admissionTimeoutMs: 6000 }

class Named extends Call {
  constructor (readonly name: string, announced: number | undefined) {
    super(announced)
  }
}

/** A scheduler on a fake clock that ticks every TICK_MS, and what it decided, as `<call> <action>` lines. */
function harness (bounds: AdmissionBounds = BOUNDS) {
  const clock = new FakeClock()
  const scheduler = new BodyAdmission<Named>(bounds, clock.clock)
  const decided: string[] = []
  const errors = new Map<string, string>()
  const record = (effects: Array<Effect<Named>>): void => {
    for (const effect of effects) {
      decided.push(`${effect.call.name} ${effect.action}${effect.action === 'refuse' ? ` ${effect.error.statusCode}` : ''}`)
      if (effect.action === 'refuse') errors.set(effect.call.name, effect.error.message)
      if (effect.action === 'close') errors.set(effect.call.name, effect.reason)
    }
  }
  clock.clock.every(TICK_MS, () => { record(scheduler.tick()) })
  return {
    clock,
    scheduler,
    errors,
    /** What was decided since the last call. */
    decisions: (): string[] => decided.splice(0),
    open: (name: string, announced?: number): Named => {
      const call = new Named(name, announced)
      record(scheduler.open(call))
      return call
    },
    receive: (call: Named, bytes: number) => { record(scheduler.received(call, bytes)) },
    arrive: (call: Named) => { record(scheduler.arrived(call)) },
    parse: (call: Named) => { record(scheduler.parse(call)) },
    build: (call: Named, bytes: number) => { record(scheduler.answer(call, bytes)) },
    answer: (call: Named, bytes: number) => { record(scheduler.answered(call, bytes)) },
    take: (call: Named, bytes: number) => { record(scheduler.taken(call, bytes)) },
    end: (call: Named) => { record(scheduler.end(call)) },
    /** A whole body of `bytes`, arrived and parsed. */
    parsed: (name: string, bytes: number): Named => {
      const call = new Named(name, bytes)
      record(scheduler.open(call))
      record(scheduler.received(call, bytes))
      record(scheduler.arrived(call))
      record(scheduler.parse(call))
      return call
    }
  }
}

test('a Content-Length is set aside before a byte arrives; a call that does not fit waits, unread, and the smallest waiting goes first', () => {
  const { scheduler, decisions, open, receive, arrive, parse, answer, end } = harness()
  const first = open('first', 3.5 * LIMIT)
  assert.deepEqual(decisions(), ['first read'])
  assert.equal(scheduler.held, 3.5 * LIMIT)
  const large = open('large', LIMIT)
  const small = open('small', 100)
  assert.deepEqual(decisions(), ['small read'], 'the large one waits; the small one fits beside')
  const smaller = open('smaller', LIMIT - 50)
  assert.deepEqual([large.phase, smaller.phase], ['waiting', 'waiting'])
  receive(first, 3.5 * LIMIT)
  arrive(first)
  parse(first)
  assert.deepEqual(decisions(), ['first parse'])
  answer(first, 2.5 * LIMIT)
  assert.deepEqual(decisions(), ['smaller read'], 'the body\'s memory is given back once its answer is built; the smaller waiting call goes first')
  end(first)
  assert.deepEqual(decisions(), ['large read'])
  for (const call of [large, small, smaller]) end(call)
  assert.deepEqual([scheduler.held, scheduler.parsing, scheduler.calls.length], [0, 0, 0])
})

test('chunked bodies are charged the bytes they received; a chunk with no room waits, and is charged once there is', () => {
  const { scheduler, decisions, open, receive, end, parsed, answer } = harness()
  const trickling = Array.from({ length: 50 }, (_, index) => open(`t${index}`))
  for (const call of trickling) receive(call, 10)
  assert.equal(scheduler.held, 500)
  decisions()
  const holder = parsed('holder', CAPACITY - 500)
  assert.deepEqual(decisions(), ['holder read', 'holder parse'])
  receive(trickling[0] as Named, 100)
  assert.equal(trickling[0]?.phase, 'waiting', 'the chunk waits for room')
  answer(holder, 0)
  assert.deepEqual(decisions(), ['t0 read'])
  assert.equal(trickling[0]?.received, 110)
  end(holder)
  for (const call of trickling) end(call)
  assert.equal(scheduler.held, 0)
})

test('a body that stalls gives way (408) to a waiting call once it has moved under 16 KiB in 0.3 s; one that keeps arriving never does', () => {
  const { clock, errors, decisions, open, receive } = harness()
  const stalled = open('stalled', 2 * LIMIT)
  const arriving = open('arriving', 2 * LIMIT)
  receive(stalled, 100)
  decisions()
  const waiting = open('waiting', 1000)
  assert.deepEqual(decisions(), [], 'no body is late yet')
  for (let ms = 0; ms < 1000; ms += 50) {
    receive(arriving, 64 * 1024)
    clock.advance(50)
  }
  assert.deepEqual(decisions(), ['stalled refuse 408', 'waiting read'])
  assert.match(errors.get('stalled') ?? '', /^request body arrived too slowly \(under 16 KiB in 0.3 s, or too little to arrive within HOOKS_BODY_TIMEOUT, 3 s\) while other calls waited for the memory it held/)
  assert.equal(arriving.phase, 'reading')
  assert.equal(waiting.phase, 'reading')
})

test('a body behind the pace that brings its last byte within HOOKS_BODY_TIMEOUT gives way after 0.3 s: 17 KiB every 250 ms of a Content-Length at the limit', () => {
  const { clock, decisions, open, receive, scheduler } = harness({ ...BOUNDS, limit: 16 * 1024 ** 2 })
  const slow = Array.from({ length: BODIES_HELD }, (_, index) => open(`slow${index}`, 16 * 1024 ** 2))
  const normal = open('normal', 5000)
  assert.equal(normal.phase, 'waiting')
  decisions()
  let waited = 0
  while (normal.phase === 'waiting') {
    if (waited % 250 === 0) for (const call of slow) receive(call, 17 * 1024)
    clock.advance(50)
    waited += 50
  }
  assert.ok(waited <= STALL_MS + TICK_MS, `waited ${waited} ms`)
  assert.deepEqual(decisions(), ['slow0 refuse 408', 'normal read'], 'one gives way, enough for the waiting call')
  assert.equal(scheduler.held, 3 * 16 * 1024 ** 2 + 5000)
})

test('a late body gives way only to a call that needs less than it holds: one as large waits for it to end', () => {
  const { clock, decisions, open } = harness({ ...BOUNDS, limit: 16 * 1024 ** 2 })
  for (let held = 0; held < BODIES_HELD; held++) open(`held${held}`, 16 * 1024 ** 2)
  const large = open('large', 16 * 1024 ** 2)
  decisions()
  clock.advance(1000)
  assert.deepEqual(decisions(), [], 'the bodies held have stalled, but giving way to one as large would gain nothing')
  open('small', 5000)
  clock.advance(TICK_MS)
  assert.deepEqual(decisions(), ['held0 refuse 408', 'small read'])
  assert.equal(large.phase, 'waiting')
})

test('a body at network speed never gives way, even when its bytes came in one gulp after the server was busy', () => {
  const { clock, decisions, open, receive, arrive } = harness()
  const fast = open('fast', CAPACITY)
  receive(fast, 1000)
  const waiting = open('waiting', 1000)
  decisions()
  // The server parsed something for 2 s: its ticks come late, and the body's bytes wait to be read.
  clock.advance(2000, true)
  assert.deepEqual(decisions(), [])
  receive(fast, CAPACITY - 1000)
  clock.advance(TICK_MS)
  assert.deepEqual(decisions(), [])
  arrive(fast)
  assert.equal(waiting.phase, 'waiting', 'it waits for the body that arrived, which will be answered')
})

test('time the server spends on other work is no body\'s delay: one read only between long parses is not late', () => {
  const { clock, decisions, open, receive, parsed } = harness({ ...BOUNDS, limit: 16 * 1024 ** 2 })
  for (let held = 0; held < BODIES_HELD - 1; held++) parsed(`held${held}`, 16 * 1024 ** 2)
  const body = open('body', 16 * 1024 ** 2)
  const waiting = open('waiting', 1000)
  assert.equal(waiting.phase, 'waiting')
  decisions()
  // Nine parses of 0.2 s, back to back: the body's bytes are read in the moments between.
  for (let parse = 0; parse < 9; parse++) {
    clock.advance(200, true)
    receive(body, 64 * 1024)
    clock.advance(1)
  }
  assert.deepEqual(decisions(), [])
  assert.equal(body.phase, 'reading')
})

test('bodies that have arrived, and bodies being parsed, never give way: a waiting call waits for their answers', () => {
  const { clock, decisions, open, parsed, answer } = harness()
  const held = Array.from({ length: BODIES_HELD }, (_, index) => parsed(`held${index}`, LIMIT))
  decisions()
  const waiting = open('waiting', 1)
  clock.advance(2000)
  assert.deepEqual(decisions(), [])
  answer(held[0] as Named, 10)
  assert.deepEqual(decisions(), ['waiting read', 'held1 parse'])
  assert.equal(waiting.phase, 'reading')
})

test('a call that ends before it opened (its client gone first) changes nothing for the calls that wait', () => {
  const { decisions, open, end } = harness()
  const reading = Array.from({ length: BODIES_HELD }, (_, index) => open(`reading${index}`, LIMIT))
  decisions()
  const waiting = open('waiting', 1)
  end(new Named('gone', 1))
  assert.deepEqual(decisions(), [])
  end(reading[0] as Named)
  assert.deepEqual(decisions(), ['waiting read'])
  assert.equal(waiting.phase, 'reading')
})

test('HOOKS_BODY_TIMEOUT: a body still arriving then gets 408; time the server was busy is added back, within its call\'s bound (then 503)', () => {
  const { clock, decisions, errors, open, receive } = harness()
  const slow = open('slow')
  const busy = open('busy')
  decisions()
  for (let ms = 0; ms < 2900; ms += 100) {
    receive(slow, PROGRESS_BYTES)
    receive(busy, PROGRESS_BYTES)
    clock.advance(100)
  }
  assert.deepEqual(decisions(), [])
  clock.advance(200)
  assert.deepEqual(decisions(), ['slow refuse 408', 'busy refuse 408'])
  assert.match(errors.get('slow') ?? '', /^request body did not arrive within HOOKS_BODY_TIMEOUT \(3 s\): send the whole body at once/)

  const blocked = open('blocked')
  receive(blocked, 10)
  decisions()
  clock.advance(1000)
  clock.advance(2000, true)
  assert.deepEqual(decisions(), [], '2 s of the 3 the server was busy: they do not count')
  clock.advance(1600)
  assert.deepEqual(decisions(), [], 'nor would have the third')
  clock.advance(4000, true)
  clock.advance(300, true)
  assert.deepEqual(decisions(), [], 'nor the next 4.3 s busy: a server busy parsing reads a body only between parses')
  clock.advance(TICK_MS, true)
  assert.deepEqual(decisions(), ['blocked refuse 503'], 'but HOOKS_ADMISSION_TIMEOUT plus HOOKS_BODY_TIMEOUT after its arrival, it gets 503')
  assert.equal(errors.get('blocked'), 'request body still arriving 9 s after the call came, the most a call may take (HOOKS_ADMISSION_TIMEOUT ' +
    "plus HOOKS_BODY_TIMEOUT, within Metacontroller's 10 s): the server was too busy to read it, having kept it waiting 0.0 s for memory, " +
    'then spent 6.4 s of the 9.0 s since on other calls; retry in 1 s (Metacontroller retries by itself)')
})

for (const { admissionTimeoutMs, boundMs } of [{ admissionTimeoutMs: 6000, boundMs: 9000 }, { admissionTimeoutMs: 8000, boundMs: 10_000 }]) {
  test(`a body that waited for memory still arriving HOOKS_ADMISSION_TIMEOUT plus HOOKS_BODY_TIMEOUT after its arrival, or at the webhook timeout if sooner, gets 503 saying the server took the time (${admissionTimeoutMs / 1000} + 3 s)`, () => {
    const { clock, decisions, open, parsed, end } = harness({ ...BOUNDS, admissionTimeoutMs })
    const held = parsed('held', CAPACITY)
    decisions()
    const late = open('late', LIMIT)
    clock.advance(admissionTimeoutMs - 1000)
    end(held)
    assert.deepEqual(decisions(), ['late read'])
    clock.advance(boundMs - admissionTimeoutMs + 1000 - TICK_MS, true)
    assert.deepEqual(decisions(), [], 'within its call\'s bound, all of it busy')
    clock.advance(TICK_MS)
    assert.deepEqual(decisions(), ['late refuse 503'], `${boundMs / 1000} s after its arrival`)
    assert.equal(late.phase, 'refused')
  })
}

test('HOOKS_ADMISSION_TIMEOUT counts from a call\'s arrival: 503 for one still waiting then, for memory or to be parsed', () => {
  const { clock, decisions, errors, open, receive, arrive, parse, parsed } = harness({ ...BOUNDS, admissionTimeoutMs: 2000 })
  parsed('big', LIMIT)
  const holder = open('holder', CAPACITY - LIMIT)
  receive(holder, CAPACITY - LIMIT)
  arrive(holder)
  decisions()
  const waiting = open('waiting', 10)
  const late = open('late', 10)
  clock.advance(1000)
  parse(holder)
  assert.deepEqual(decisions(), [])
  clock.advance(1000)
  assert.deepEqual(decisions(), ['holder refuse 503', 'waiting refuse 503', 'late refuse 503'])
  assert.equal(waiting.phase, 'refused')
  assert.equal(late.phase, 'refused')
  assert.match(errors.get('waiting') ?? '', /^no memory to receive the request body within HOOKS_ADMISSION_TIMEOUT \(2 s\) of its arrival: the bodies and answers of other calls hold it; retry in 1 s/)
  assert.match(errors.get('holder') ?? '', /^no memory to parse the request body within HOOKS_ADMISSION_TIMEOUT \(2 s\) of its arrival: other bodies are being parsed/)
})

test('parsing: HOOKS_BODY_LIMIT of bodies at once, the first that fits in arrival order, any body alone; each share given back once its answer is built', () => {
  const { decisions, parsed, answer, scheduler } = harness()
  const huge = parsed('huge', LIMIT)
  const a = parsed('a', 600 * 1024)
  const b = parsed('b', 520 * 1024)
  const c = parsed('c', 300 * 1024)
  assert.deepEqual(decisions().filter((line) => line.endsWith('parse')), ['huge parse'])
  answer(huge, 100)
  assert.deepEqual(decisions(), ['a parse', 'c parse'], 'b does not fit beside a; c does')
  answer(a, 100)
  assert.deepEqual(decisions(), ['b parse'])
  answer(b, 100)
  answer(c, 100)
  assert.equal(scheduler.parsing, 0)
})

test('a small body is parsed beside a body at the limit, within an eighth of the limit beyond it', () => {
  const { decisions, parsed, answer } = harness()
  const huge = parsed('huge', LIMIT)
  parsed('small', 100 * 1024)
  parsed('second small', 40 * 1024)
  parsed('third small', 20 * 1024)
  parsed('large', 600 * 1024)
  assert.deepEqual(decisions().filter((line) => line.endsWith('parse')), ['huge parse', 'small parse', 'third small parse'],
    'the second does not fit in the eighth beside the first; the third does, and a body over 512 KiB waits')
  answer(huge, 100)
  assert.deepEqual(decisions(), ['second small parse', 'large parse'])
})

test('answers are charged once built and given back as taken; one not taken within HOOKS_BODY_TIMEOUT is closed; one that stalls gives way to a waiting call', () => {
  const { clock, decisions, errors, open, parsed, answer, take, scheduler } = harness()
  const unread = parsed('unread', 100)
  const reader = parsed('reader', 100)
  answer(unread, 2 * LIMIT)
  answer(reader, LIMIT)
  take(unread, 1000)
  assert.equal(scheduler.held, 3 * LIMIT - 1000)
  decisions()
  for (let ms = 0; ms < 2900; ms += 100) {
    if (reader.charged > 0) take(reader, Math.min(reader.charged, 64 * 1024))
    clock.advance(100)
  }
  assert.deepEqual(decisions(), [])
  clock.advance(100)
  assert.deepEqual(decisions(), ['unread close'])
  assert.match(errors.get('unread') ?? '', /^its client did not take its answer within HOOKS_BODY_TIMEOUT \(3 s\)/)
  assert.equal(scheduler.held, 0)

  const stalled = parsed('stalled', 100)
  answer(stalled, CAPACITY)
  decisions()
  const waiting = open('waiting', 100)
  clock.advance(STALL_MS + TICK_MS)
  assert.deepEqual(decisions(), ['stalled close', 'waiting read'])
  assert.match(errors.get('stalled') ?? '', /^its client took under 16 KiB of its answer in 0.3 s, or too little to take it within HOOKS_BODY_TIMEOUT \(3 s\), while other calls waited for the memory it held/)
  assert.equal(waiting.phase, 'reading')
})

test('an answer sets aside what its controller says it may take before it is built; large ones leave the last eighth to small ones', () => {
  const { clock, decisions, errors, parsed, build, answer, scheduler } = harness()
  const large = Array.from({ length: 8 }, (_, index) => parsed(`large${index}`, 1000))
  decisions()
  for (const call of large) build(call, LIMIT)
  assert.deepEqual(decisions(), ['large0 answer', 'large1 answer', 'large2 answer'], 'each sets aside a body limit; 3.5 of 4 are for large answers')
  assert.equal(scheduler.held, 3 * LIMIT + 5 * 1000)
  const small = parsed('small', 1000)
  build(small, 512 * 1024)
  assert.deepEqual(decisions(), ['small read', 'small parse', 'small answer'], 'an answer adding at most 512 KiB takes the reserve')
  answer(small, 100)
  answer(large[0] as Named, LIMIT)
  assert.deepEqual(decisions(), [], 'an answer built holds its bytes until taken')
  answer(large[1] as Named, 100)
  assert.deepEqual(decisions(), ['large3 answer'])
  clock.advance(BOUNDS.admissionTimeoutMs)
  assert.deepEqual(decisions().filter((line) => !line.endsWith('close')), ['large4 answer', 'large5 refuse 503', 'large6 refuse 503', 'large7 refuse 503'],
    'the answers not taken within HOOKS_BODY_TIMEOUT are closed, which makes room for one more')
  assert.equal(errors.get('large5'), 'no memory to build the answer its spec asks for within HOOKS_ADMISSION_TIMEOUT (6 s) of its arrival: ' +
    'the bodies and answers of other calls hold it; retry in 1 s (Metacontroller retries by itself)')
})

test('an answer that fits nowhere is built when no other answer is being built: bodies never hold every answer up', () => {
  const { decisions, open, parsed, build, answer } = harness()
  const bodies = Array.from({ length: BODIES_HELD - 1 }, (_, index) => open(`body${index}`, LIMIT))
  const call = parsed('call', 1000)
  const next = parsed('next', 1000)
  decisions()
  build(call, LIMIT)
  assert.deepEqual(decisions(), ['call answer'])
  build(next, LIMIT)
  assert.deepEqual(decisions(), [], 'a second waits for the first')
  answer(call, 100)
  assert.deepEqual(decisions(), ['next answer'])
  assert.equal(bodies.length, BODIES_HELD - 1)
})

/** A step of a random interleaving: an event of one of the calls, or time passing. */
type Step =
  | { kind: 'open', call: number, announced: number | undefined }
  | { kind: 'receive' | 'build' | 'answer' | 'take', call: number, bytes: number }
  | { kind: 'arrive' | 'parse' | 'end', call: number }
  | { kind: 'advance', ms: number, busy: boolean }

const CALLS = 6
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('open' as const), call: fc.nat(CALLS - 1), announced: fc.option(fc.integer({ min: 0, max: LIMIT }), { nil: undefined }) }),
  fc.record({ kind: fc.constantFrom('receive' as const, 'build' as const, 'answer' as const, 'take' as const), call: fc.nat(CALLS - 1), bytes: fc.integer({ min: 0, max: 2 * LIMIT }) }),
  fc.record({ kind: fc.constantFrom('arrive' as const, 'parse' as const, 'end' as const), call: fc.nat(CALLS - 1) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 1500 }), busy: fc.boolean() })
)

test('over any interleaving of events and time: memory and parsing stay bounded, the books balance, and every wait and transfer ends in time', () => {
  fc.assert(fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
    const clock = new FakeClock()
    const scheduler = new BodyAdmission<Named>(BOUNDS, clock.clock)
    const calls: Array<Named | undefined> = []
    /** When each call started waiting, reading or sending, for the bounds on each. */
    const since = new Map<Named, { phase: Phase, at: number }>()
    const check = (effects: Array<Effect<Named>>): void => {
      for (const effect of effects) {
        const expected = { read: 'reading', parse: 'parsing', answer: 'answering', refuse: 'refused', close: 'ended' }[effect.action]
        assert.equal(effect.call.phase, expected, `${effect.call.name} ${effect.action}`)
        if (effect.action === 'refuse' && effect.error.statusCode === 503) {
          assert.ok(clock.time - effect.call.openedAt >= BOUNDS.admissionTimeoutMs, 'a 503 comes no sooner than HOOKS_ADMISSION_TIMEOUT')
        }
      }
      const live = [...scheduler.calls]
      assert.equal(scheduler.held, live.reduce((sum, call) => sum + call.charged, 0), 'held is what the calls hold')
      assert.ok(live.every((call) => call.charged >= 0 && (call.phase !== 'refused' || call.charged === 0)))
      const bodies = live.filter((call) => call.phase !== 'sending').reduce((sum, call) => sum + call.charged, 0)
      // One answer is built even when it does not fit, if no other is being built.
      const building = live.filter((call) => call.phase === 'answering')
      assert.ok(bodies <= scheduler.capacity || (building.length === 1 && bodies <= scheduler.capacity + LIMIT), `bodies hold ${bodies} of ${scheduler.capacity}`)
      assert.equal(scheduler.answering, building.length)
      const parsing = live.filter((call) => ['parsing', 'queued to answer', 'answering'].includes(call.phase))
      assert.equal(scheduler.parsing, parsing.reduce((sum, call) => sum + call.received, 0))
      assert.ok(parsing.length <= 1 || scheduler.parsing <= LIMIT, 'a body limit\'s worth is parsed at once, or one body')
      for (const call of live) {
        const last = since.get(call)
        if (last?.phase !== call.phase) since.set(call, { phase: call.phase, at: clock.time })
        const { at } = since.get(call) as { at: number }
        // An answer's busy time is added back up to as much again; a tick may come TICK_MS late. A body's busy time is
        // added back whole, within its call's bound on arriving.
        if (call.phase === 'sending' && call.charged > 0) assert.ok(clock.time - at < 2 * BOUNDS.bodyTimeoutMs + TICK_MS + 1500, `${call.name} ${call.phase} for ${clock.time - at} ms`)
        if (call.phase === 'reading') assert.ok(clock.time - call.openedAt < BOUNDS.admissionTimeoutMs + BOUNDS.bodyTimeoutMs + TICK_MS + 1500, `${call.name} reading ${clock.time - call.openedAt} ms after its arrival`)
        if (call.phase === 'waiting' || call.phase === 'queued to parse' || call.phase === 'queued to answer') assert.ok(clock.time - call.openedAt < BOUNDS.admissionTimeoutMs + TICK_MS + 1500, `${call.name} ${call.phase} for ${clock.time - call.openedAt} ms`)
      }
    }
    clock.clock.every(TICK_MS, () => { check(scheduler.tick()) })
    for (const next of steps) {
      if (next.kind === 'advance') {
        clock.advance(next.ms, next.busy)
        continue
      }
      const call = calls[next.call]
      if (next.kind === 'open') {
        if (call !== undefined && call.phase !== 'ended') continue
        const opened = new Named(`c${next.call}`, next.announced)
        calls[next.call] = opened
        check(scheduler.open(opened))
        continue
      }
      if (call === undefined) continue
      // What the plugin does: no more bytes than announced, and a chunk is sent only once the last one was taken.
      if (next.kind === 'receive' && (call.phase !== 'reading' || (call.announced !== undefined && call.received + next.bytes > call.announced))) continue
      if (next.kind === 'arrive' && call.announced !== undefined && call.received !== call.announced) continue
      const effects = next.kind === 'receive'
        ? scheduler.received(call, next.bytes)
        : next.kind === 'build'
          ? scheduler.answer(call, next.bytes)
          : next.kind === 'answer'
            ? scheduler.answered(call, next.bytes)
            : next.kind === 'take'
              ? scheduler.taken(call, next.bytes)
              : next.kind === 'arrive' ? scheduler.arrived(call) : next.kind === 'parse' ? scheduler.parse(call) : scheduler.end(call)
      check(effects)
    }
    // Left alone, every call ends up answered (its answer taken), refused or closed, but for those being parsed or
    // answered and those not yet asked to be.
    clock.advance(2 * BOUNDS.bodyTimeoutMs + BOUNDS.admissionTimeoutMs + 1000)
    for (const call of scheduler.calls) {
      assert.ok(['arrived', 'parsing', 'answering', 'refused'].includes(call.phase) || (call.phase === 'sending' && call.charged === 0), `${call.name} still ${call.phase}`)
    }
  }), {
    numRuns: 2000,
    // A body that arrives while the server is busy for longer than HOOKS_BODY_TIMEOUT: it reads on.
    examples: [[[
      { kind: 'open', call: 0, announced: undefined },
      { kind: 'advance', ms: 1071, busy: true },
      { kind: 'advance', ms: 1379, busy: true },
      { kind: 'advance', ms: 1437, busy: true },
      { kind: 'advance', ms: 1095, busy: false },
      { kind: 'advance', ms: 718, busy: true }
    ]]]
  })
})
