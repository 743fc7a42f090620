/**
 * Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource) as far as volume sizes need them: parse,
 * compare, and print a whole number of bytes in the canonical form the API server stores.
 */

export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent'

export interface Quantity {
  /** The value in units of 10^-9, rounded up as Kubernetes does. */
  nanos: bigint
  /** The format of the suffix; the canonical form keeps it. */
  format: QuantityFormat
}

/** A quantity as Kubernetes writes one; the same text as an RE2 pattern, so the CRD checks the syntax the hook reads. */
export const QUANTITY_SYNTAX = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|[eE]([+-]?\d{1,3}))?$/
const BINARY_POWERS: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 }
const DECIMAL_EXPONENTS: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei']
const DECIMAL_SUFFIXES: Record<number, string> = { 0: '', 3: 'k', 6: 'M', 9: 'G', 12: 'T', 15: 'P', 18: 'E' }
const NANOS_PER_UNIT = 1_000_000_000n
/** Kubernetes caps quantities at the largest int64. */
export const MAX_BYTES = 2n ** 63n - 1n

/** Parses a quantity as Kubernetes does; undefined when it is not one. */
export function parseQuantity (text: string): Quantity | undefined {
  const match = QUANTITY_SYNTAX.exec(text)
  if (match === null) return undefined
  const [, sign, number = '', binary, decimal, exponent] = match
  const [whole = '', fraction = ''] = number.split('.')
  let numerator = BigInt(`${whole}${fraction}` || '0')
  let power10 = 9 - fraction.length
  let format: QuantityFormat = 'DecimalSI'
  if (binary !== undefined) {
    numerator *= 1024n ** BigInt(BINARY_POWERS[binary] ?? 0)
    format = 'BinarySI'
  } else if (decimal !== undefined) {
    power10 += DECIMAL_EXPONENTS[decimal] ?? 0
  } else if (exponent !== undefined) {
    power10 += Number(exponent)
    format = 'DecimalExponent'
  }
  const nanos = power10 >= 0
    ? numerator * 10n ** BigInt(power10)
    : (numerator + 10n ** BigInt(-power10) - 1n) / 10n ** BigInt(-power10)
  return { nanos: sign === '-' ? -nanos : nanos, format }
}

/** The value in whole bytes, a fraction of a byte rounded up (as storage is allocated: never less than asked). */
export function bytesRoundedUp (quantity: Quantity): bigint {
  const whole = quantity.nanos / NANOS_PER_UNIT
  return quantity.nanos % NANOS_PER_UNIT > 0n ? whole + 1n : whole
}

/** The quantity of a whole number of bytes, in `format`. */
export function ofBytes (bytes: bigint, format: QuantityFormat): Quantity {
  return { nanos: bytes * NANOS_PER_UNIT, format }
}

export function compareQuantities (a: Quantity, b: Quantity): number {
  return a.nanos < b.nanos ? -1 : a.nanos > b.nanos ? 1 : 0
}

function removeFactors (value: bigint, base: bigint, limit: number): [bigint, number] {
  let times = 0
  while (times < limit && value % base === 0n) {
    value /= base
    times++
  }
  return [value, times]
}

/**
 * The string the API server stores for a whole, non-negative number of bytes written in `format`
 * (Quantity.CanonicalizeBytes): binary values of at least 1Ki keep a binary suffix, the others use the largest
 * power of 1000 that leaves a whole number. `canonicalBytes(2Gi) = "2Gi"`, `1.5Gi -> "1536Mi"`, `2000M -> "2G"`.
 */
export function canonicalBytes (bytes: bigint, format: QuantityFormat): string {
  if (bytes === 0n) return '0'
  if (format === 'BinarySI' && bytes >= 1024n) {
    const [amount, power] = removeFactors(bytes, 1024n, BINARY_SUFFIXES.length - 1)
    return `${amount}${BINARY_SUFFIXES[power]}`
  }
  let [amount, exponent] = removeFactors(bytes, 10n, Number.MAX_SAFE_INTEGER)
  const excess = exponent % 3
  amount *= 10n ** BigInt(excess)
  exponent -= excess
  if (format === 'DecimalExponent') return exponent === 0 ? `${amount}` : `${amount}e${exponent}`
  return `${amount}${DECIMAL_SUFFIXES[exponent] ?? `e${exponent}`}`
}
