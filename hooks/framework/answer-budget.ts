import { UnservableSpecError } from './errors.js'
import type { CompositeResponse, DecoratorResponse } from './wire/schemas.js'

/**
 * The most an answer may be, checked before it is serialised: a spec that asks for more is answered on the resource
 * (Ready=False, reason AnswerTooLarge), its children kept as they are, like an invalid spec (invalid-spec.ts).
 */

/**
 * The answer budget is HOOKS_BODY_LIMIT: an answer's children come back in the next request, each with at least its
 * answered fields and their copy in the last-applied annotation, so a larger answer leads to requests the server
 * refuses (413) from then on; and the server starts only with 16 times the limit in memory (runtime/config.ts), room
 * for the bodies it holds at once and one answer being serialised, which takes about three times its size.
 */
export function answerBudget (bodyLimit: number): number {
  return bodyLimit
}

/** The bytes of `text` as JSON.stringify writes it, quotes included, in UTF-8. */
function stringBytes (text: string): number {
  let bytes = text.length + 2
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    // Printable ASCII but `"` and `\` is written as it is: one byte, counted already.
    if (code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c) continue
    if (code === 0x22 || code === 0x5c || code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) bytes += 1
    else if (code < 0x20) bytes += 5
    else if (code < 0x80) continue
    else if (code < 0x800) bytes += 1
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00) {
      // Two code units, four bytes.
      bytes += 2
      index++
    } else if (code >= 0xd800 && code <= 0xdfff) {
      // An unpaired surrogate: JSON.stringify writes it escaped, \udxxx.
      bytes += 5
    } else {
      bytes += 2
    }
  }
  return bytes
}

/** A bound the bytes of `text` as JSON.stringify writes it never pass: no code unit takes more than six (`\u0001`). */
function stringBytesBound (text: string): number {
  return 6 * text.length + 2
}

/** Values JSON.stringify leaves out of an object, and writes as null in an array. */
function omitted (value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol'
}

/**
 * The size in UTF-8 bytes of JSON.stringify(value), for a JSON value as the wire schemas type one, or Infinity as soon
 * as it passes `budget`: counted by walking the value, never by writing it, and at most about `budget` steps however
 * large the value would be written (a string shared by many objects is written, and counted, each time). With
 * `strings` = stringBytesBound, a bound above the size, found without reading the strings' characters.
 */
export function jsonBytes (value: unknown, budget: number, strings: (text: string) => number = stringBytes): number {
  let bytes = 0
  const pending: unknown[] = [value]
  while (pending.length > 0 && bytes <= budget) {
    const next = pending.pop()
    if (typeof next === 'string') {
      // A string takes at least one byte a character: a long one passes the budget without being looked at.
      bytes += next.length + 2 > budget - bytes ? next.length + 2 : strings(next)
    } else if (typeof next === 'number') {
      bytes += Number.isFinite(next) ? String(next).length : 4
    } else if (typeof next === 'boolean') {
      bytes += next ? 4 : 5
    } else if (next === null || omitted(next)) {
      // null, or an omitted value in an array (one in an object is never pushed).
      bytes += 4
    } else if (Array.isArray(next)) {
      bytes += 2 + Math.max(0, next.length - 1)
      if (bytes > budget) break
      for (let index = next.length - 1; index >= 0; index--) pending.push(next[index])
    } else {
      const object = next as Record<string, unknown>
      const keys = Object.keys(object)
      bytes += 2
      let fields = 0
      for (let index = 0; index < keys.length && bytes <= budget; index++) {
        const key = keys[index] as string
        const field = object[key]
        if (omitted(field)) continue
        bytes += (fields++ === 0 ? 0 : 1) + strings(key) + 1
        pending.push(field)
      }
    }
  }
  return bytes > budget ? Infinity : bytes
}

/** Where an answer passed the budget: at which of its children, or before them (its status and other fields). */
interface Passed {
  child: number | undefined
  children: number
  /** The whole answer's size, supposing every child takes what the ones measured took: for the message only. */
  estimate: number
}

/** Undefined when `answer` fits in `budget`; otherwise where it passed it. */
export function answerPassing (answer: CompositeResponse | DecoratorResponse, budget: number): Passed | undefined {
  // Most answers are far below the budget: a bound above their size shows it without reading a character.
  if (jsonBytes(answer, budget, stringBytesBound) <= budget) return undefined
  const children: unknown[] = 'children' in answer ? answer.children : answer.attachments
  const others = jsonBytes({ ...answer, ...('children' in answer ? { children: [] } : { attachments: [] }) }, budget)
  if (others === Infinity) return { child: undefined, children: children.length, estimate: budget }
  let bytes = others
  for (let index = 0; index < children.length; index++) {
    bytes += (index === 0 ? 0 : 1) + jsonBytes(children[index], budget - bytes)
    if (bytes === Infinity) {
      // The children measured took the budget but `others`: the rest are supposed to take as much each.
      return { child: index + 1, children: children.length, estimate: Math.round(others + (budget - others) * children.length / (index + 1)) }
    }
  }
  return undefined
}

const SIZE_UNITS = ['bytes', 'KB', 'MB', 'GB', 'TB']

/** `bytes` for a person: 207 MB, 16.8 MB, 920 KB. */
export function shownSize (bytes: number): string {
  let unit = 0
  let value = bytes
  while (value >= 1000 && unit < SIZE_UNITS.length - 1) {
    value /= 1000
    unit++
  }
  return `${unit === 0 || value >= 100 ? Math.round(value) : value.toFixed(1)} ${SIZE_UNITS[unit]}`
}

/** The refusal of an answer that passed the budget, naming the bound, how far the answer got, and what to do. */
export function answerTooLarge (kind: string, budget: number, passed: Passed): UnservableSpecError {
  const where = passed.child === undefined
    ? 'before its children, in its status'
    : `by its ${ordinal(passed.child)} child of ${passed.children}, about ${shownSize(passed.estimate)} in all`
  return new UnservableSpecError('AnswerTooLarge', `${kind} spec asks for an answer larger than the hook sends: it passes ${budget} bytes (HOOKS_BODY_LIMIT, the most an answer may be) ` +
    `${where}. Change the spec to ask for fewer or smaller children, or raise HOOKS_BODY_LIMIT and the hook server's memory limit with it; until then the hook changes nothing it manages.`)
}

function ordinal (position: number): string {
  const tens = position % 100
  const suffix = tens >= 11 && tens <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][position % 10] ?? 'th'
  return `${position}${suffix}`
}
