import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { podSetRequest } from '../dev/api-server/podset-requests.js'
import type { RequestBody } from './report.js'

/** The hook requests the benchmark sends: the test fixtures, compact as Metacontroller's Go encoder writes them. */

const fixtures = join(import.meta.dirname, '..', 'test', 'fixtures')

type Json = Record<string, any>

function fixture (controller: string, name: string): Json {
  return JSON.parse(readFileSync(join(fixtures, controller, `${name}.json`), 'utf8')) as Json
}

export interface CompositeCase {
  name: string
  path: string
  /** Built on demand: the largest takes a second and 11 MB. */
  body: () => string
  /** The peers compute this answer too (PodSet); the other composites are measured on this server alone. */
  peers: boolean
  /**
   * A multi-megabyte body: measured last (the heap it leaves behind would count in the other cases' peak RSS), and in
   * one slice per run.
   */
  large: boolean
}

/** The composite hooks at steady state: every child observed as the hook last answered it. */
export function compositeCases (): CompositeCase[] {
  const podSet = (pods: number): CompositeCase => ({
    name: `PodSet ${pods.toLocaleString('en')} pods`,
    path: '/podset/sync',
    body: () => JSON.stringify(podSetRequest({ replicas: pods })),
    peers: true,
    large: pods >= 1000
  })
  return [
    { name: 'BookStore', path: '/bookstore/sync', body: () => JSON.stringify(fixture('bookstore', 'steady-state')), peers: false, large: false },
    { name: 'PulsarConsumer', path: '/pulsar-consumer/sync', body: () => JSON.stringify(fixture('pulsar-consumer', 'sync-steady')), peers: false, large: false },
    podSet(10),
    podSet(100),
    podSet(2000)
  ]
}

/** The fixed cost's request: a PodSet sync with one pod, at steady state. */
export function fixedCostRequest (): string {
  return JSON.stringify(podSetRequest({ replicas: 1 }))
}

/** The fixture of a first sync, and `next` for the same sync of a new object each call (`bench-<n>`, `n` counting up). */
export function postgresWriterCreate (): { request: Json, next: () => string } {
  const request = fixture('postgres-writer', 'sync-create')
  const marker = '"__name__"'
  const [before, after] = JSON.stringify({ ...request, object: { ...request.object, metadata: { ...request.object.metadata, name: '__name__' } } }).split(marker) as [string, string]
  let count = 0
  return { request, next: () => `${before}"bench-${count++}"${after}` }
}

/** The fixture of an unchanged object's periodic resync (its row written by an earlier sync). */
export function postgresWriterResync (): Json {
  return fixture('postgres-writer', 'sync-resync')
}

/** A request's size, and the objects it carries besides its parent: a composite's children, a decorator's attachments. */
export function requestBody (text: string): RequestBody {
  const request = JSON.parse(text) as { children?: Record<string, object>, attachments?: Record<string, object> }
  const groups = Object.values(request.children ?? request.attachments ?? {})
  return { bytes: Buffer.byteLength(text), children: groups.reduce((sum, group) => sum + Object.keys(group).length, 0) }
}
