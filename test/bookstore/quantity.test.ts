import assert from 'node:assert/strict'
import { test } from 'node:test'
import { bytesRoundedUp, canonicalBytes, compareQuantities, parseQuantity } from '../../hooks/bookstore/quantity.js'

/**
 * Written quantity -> what kube-apiserver stores when it is re-serialized in canonical form, and the value in bytes:
 * taken from k8s.io/apimachinery v0.36.3 (`ParseQuantity(s).CanonicalizeBytes()`, `Value()`), each canonical string
 * checked to parse back to itself.
 */
const KUBERNETES: Array<[string, string, bigint]> = [
  ['1Gi', '1Gi', 1073741824n],
  ['2048Mi', '2Gi', 2147483648n],
  ['1.5Gi', '1536Mi', 1610612736n],
  ['.5Gi', '512Mi', 536870912n],
  ['0.25Gi', '256Mi', 268435456n],
  ['1.25Ti', '1280Gi', 1374389534720n],
  ['1000Mi', '1000Mi', 1048576000n],
  ['1048576Ki', '1Gi', 1073741824n],
  ['1024Gi', '1Ti', 1099511627776n],
  ['3072Gi', '3Ti', 3298534883328n],
  ['1024Pi', '1Ei', 1152921504606846976n],
  ['7Ei', '7Ei', 8070450532247928832n],
  ['1.0Gi', '1Gi', 1073741824n],
  ['01Gi', '1Gi', 1073741824n],
  ['+1Gi', '1Gi', 1073741824n],
  ['0.5Ki', '512', 512n],
  ['1.5Ki', '1536', 1536n],
  ['0.9765625Ki', '1k', 1000n],
  ['1000Ki', '1000Ki', 1024000n],
  ['1G', '1G', 1000000000n],
  ['2000M', '2G', 2000000000n],
  ['1500M', '1500M', 1500000000n],
  ['1.5G', '1500M', 1500000000n],
  ['1000k', '1M', 1000000n],
  ['1000m', '1', 1n],
  ['1000000u', '1', 1n],
  ['3000000000n', '3', 3n],
  ['5.', '5', 5n],
  ['512', '512', 512n],
  ['1024', '1024', 1024n],
  ['1024000', '1024k', 1024000n],
  ['1200000', '1200k', 1200000n],
  ['1073741824', '1073741824', 1073741824n],
  ['1000000000', '1G', 1000000000n],
  ['999999999999', '999999999999', 999999999999n],
  ['9223372036854775807', '9223372036854775807', 9223372036854775807n],
  ['1e9', '1e9', 1000000000n],
  ['1E9', '1e9', 1000000000n],
  ['1.5e9', '1500e6', 1500000000n],
  ['1e3', '1e3', 1000n],
  ['2.5e3', '2500', 2500n],
  ['12e2', '1200', 1200n],
  ['5e0', '5', 5n],
  ['100e-2', '1', 1n],
  ['1e18', '1e18', 1000000000000000000n]
]

test('whole-byte quantities get the canonical string and value Kubernetes gives them', () => {
  for (const [written, canonical, bytes] of KUBERNETES) {
    const quantity = parseQuantity(written)
    assert.ok(quantity !== undefined, written)
    assert.equal(bytesRoundedUp(quantity), bytes, written)
    assert.equal(canonicalBytes(bytes, quantity.format), canonical, written)
    const again = parseQuantity(canonical)
    assert.ok(again !== undefined && compareQuantities(again, quantity) === 0, `${canonical} parses back to ${written}`)
    assert.equal(canonicalBytes(bytes, again.format), canonical, `${canonical} is a fixed point`)
  }
})

test('fractions of a byte are read, rounded up to nano units as Kubernetes does, and to whole bytes as storage is', () => {
  for (const [written, bytes] of [['1500m', 2n], ['1.1Gi', 1181116007n], ['0.1Gi', 107374183n], ['0.001Ki', 2n], ['12e-1', 2n], ['1n', 1n]] as const) {
    const quantity = parseQuantity(written)
    assert.ok(quantity !== undefined, written)
    assert.equal(bytesRoundedUp(quantity), bytes, written)
  }
  assert.equal(parseQuantity('1181116006400m')?.nanos, 1181116006400000000n)
  assert.equal(parseQuantity('1n')?.nanos, 1n)
  assert.equal(parseQuantity('-1Gi')?.nanos, -1073741824000000000n)
})

test('strings that are not quantities, or not sizes a volume can have, are refused', () => {
  // Kubernetes refuses the first ones; it reads 'Gi' and '.' as zero, and 1e1000 as a size no disk has.
  for (const written of ['lots', '', ' 1Gi', '1Gi ', '10K', '1e', '1.2.3', '1GiB', '1gi', '0x10', '--1', 'Gi', '.', '1e1000']) {
    assert.equal(parseQuantity(written), undefined, JSON.stringify(written))
  }
})

test('quantities compare by value, whatever their suffix', () => {
  const size = (text: string) => {
    const quantity = parseQuantity(text)
    assert.ok(quantity !== undefined, text)
    return quantity
  }
  assert.equal(compareQuantities(size('2Gi'), size('2048Mi')), 0)
  assert.equal(compareQuantities(size('2G'), size('2Gi')), -1)
  assert.equal(compareQuantities(size('1.5Gi'), size('1536Mi')), 0)
  assert.equal(compareQuantities(size('1Ti'), size('1000Gi')), 1)
  assert.equal(compareQuantities(size('1e9'), size('1G')), 0)
})
