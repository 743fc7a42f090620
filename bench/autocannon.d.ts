/** The part of autocannon's programmatic API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
    /** Called before each request; returns the request to send. */
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request
  }

  export interface Options {
    url: string
    connections: number
    /** Seconds. */
    duration?: number
    /** Requests in all, each answered before the run ends; overrides `duration`. */
    amount?: number
    /** Seconds before a request counts as timed out. */
    timeout?: number
    /** Milliseconds between samples; the end of a run is noticed at a sample. */
    sampleInt?: number
    method?: string
    headers?: Record<string, string>
    body?: string | Buffer
    requests?: Request[]
    /** False for a response counts as a mismatch. */
    verifyBody?: (body: string) => boolean
  }

  export interface Result {
    /** Seconds, measured. */
    duration: number
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
  }

  export interface Instance extends EventEmitter, PromiseLike<Result> {
    on (event: 'response', listener: (client: unknown, statusCode: number, bytes: number, milliseconds: number) => void): this
  }

  export default function autocannon (options: Options): Instance
}
