import { Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** What a hook call came to, as a low-cardinality label. */
export type Outcome = 'ok' | 'not_ready' | 'not_modified' | 'rejected' | 'error'

export interface Metrics {
  registry: Registry
  hookDuration: Histogram<'controller' | 'hook' | 'outcome'>
}

/** A registry per app instance, so that several apps (as in tests) never collide. */
export function createMetrics (): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const hookDuration = new Histogram({
    name: 'metacontroller_hooks_duration_seconds',
    help: 'Duration of hook calls by controller, hook and outcome (ok; not_ready = answered with Ready=False or finalized=false, not_modified = 304 to a request that carried its own ETag, rejected = 4xx, error = 5xx)',
    labelNames: ['controller', 'hook', 'outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry]
  })
  return { registry, hookDuration }
}
