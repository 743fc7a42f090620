import { randomUUID } from 'node:crypto'
import { fixture } from '../helpers/fixtures.js'
import type { ServerProcess } from '../../dev/server-process.js'
import { callHook, outcomeOf, type Answer, type Hook } from './hook-calls.js'

/** PostgresWriter objects as Metacontroller sees them, and the replay of their latest state. */

export interface WriterSpec {
  table: string
  name: string
  age: number
  country: string
}

export interface Row extends WriterSpec {
  id: string
}

const NAMESPACE = 'default'
const requestTemplates = { sync: fixture('postgres-writer', 'sync-create'), finalize: fixture('postgres-writer', 'finalize') }

/**
 * One PostgresWriter as Metacontroller sees it: the spec and generation come from its user; the status is the one
 * of the last 200 answer; it is terminating from its deletion until a finalize answers `finalized: true`, and then
 * it is gone. Metacontroller sends one hook call per object at a time: finalize while terminating, sync otherwise.
 */
export class Writer {
  readonly id: string
  spec: WriterSpec
  generation = 1
  uid = randomUUID()
  status: Record<string, unknown> | undefined
  terminating = false
  gone = false

  constructor (readonly name: string, spec: WriterSpec) {
    this.id = `${NAMESPACE}/${name}`
    this.spec = spec
  }

  /** The user changes the spec; a gone object is created anew under the same name. */
  edit (spec: WriterSpec): void {
    if (this.gone) {
      this.uid = randomUUID()
      this.generation = 1
      this.status = undefined
      this.gone = false
    } else {
      this.generation += 1
    }
    this.spec = spec
  }

  delete (): void {
    this.terminating = true
  }

  nextHook (): Hook {
    return this.terminating ? 'finalize' : 'sync'
  }

  /** The body of the next hook call, built from the fixture Metacontroller would send. */
  request (): object {
    const hook = this.nextHook()
    const body = structuredClone(requestTemplates[hook])
    const object = body.object
    object.metadata.name = this.name
    object.metadata.namespace = NAMESPACE
    object.metadata.uid = this.uid
    object.metadata.generation = this.generation
    object.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] = `${JSON.stringify({
      apiVersion: object.apiVersion, kind: object.kind, metadata: { annotations: {}, name: this.name, namespace: NAMESPACE }, spec: this.spec
    })}\n`
    object.spec = { ...this.spec }
    if (this.status === undefined) delete object.status
    else object.status = this.status
    return body
  }

  /** What Metacontroller does with an answer: a 200 answer's status is written back, `finalized: true` ends the object. */
  observe (answer: Answer): void {
    if (answer.statusCode !== 200) return
    this.status = answer.body.status
    if (answer.hook === 'finalize' && answer.body.finalized === true) {
      this.terminating = false
      this.gone = true
    }
  }

  /** Sends the next hook call and observes its answer. */
  async call (server: ServerProcess): Promise<Answer> {
    const answer = await callHook(server, this.nextHook(), this.request())
    this.observe(answer)
    return answer
  }

  /** The row this object owns once everything converged; undefined for a deleted one (never asked while terminating). */
  expectedRow (): Row | undefined {
    return this.gone ? undefined : { id: this.id, ...this.spec }
  }
}

/**
 * Replays the latest state of every writer, as Metacontroller's resync would, ten at a time: a sync for an existing
 * writer, a finalize for a terminating one, repeated until it succeeds (at most `attempts` calls each).
 */
export async function replay (server: ServerProcess, writers: readonly Writer[], attempts = 3): Promise<Answer[]> {
  const answers: Answer[] = []
  await forEachConcurrently(writers, 10, async (writer) => {
    for (let attempt = 0; attempt < attempts && !writer.gone; attempt++) {
      const answer = await writer.call(server)
      answers.push(answer)
      if (outcomeOf(answer) === 'Ready') return
    }
  })
  return answers
}

/** Runs `work` for every item, at most `limit` at a time. */
export async function forEachConcurrently<T> (items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T
      await work(item)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}
