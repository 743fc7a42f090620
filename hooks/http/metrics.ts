import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/**
 * What a hook call came to, as a low-cardinality label. A sync is `ok` or `not_ready` (answered with Ready=False); a
 * finalize is `finalized` (finalized=true: Metacontroller may let the parent go) or `pending` (finalized=false: it
 * calls again). Either hook can be `not_modified` (304 to a request that carried its own ETag), `rejected` (4xx),
 * `overloaded` (503: no memory for its body within HOOKS_ADMISSION_TIMEOUT), `aborted` (the client closed the
 * connection before its answer) or an `error` (any other 5xx).
 */
export type Outcome = 'ok' | 'not_ready' | 'finalized' | 'pending' | 'not_modified' | 'rejected' | 'overloaded' | 'aborted' | 'error'

export interface Metrics {
  registry: Registry
  hookDuration: Histogram<'controller' | 'hook' | 'outcome'>
  driftRepairs: Counter<'controller' | 'drift'>
  /** Answers with a body (200) by their Ready condition, for alerts on reasons such as InvalidSpec. */
  answers: Counter<'controller' | 'hook' | 'ready' | 'reason'>
  /** Hook calls refused (4xx, 503) by status code, for alerts on 408, 503 and 422. */
  refusals: Counter<'controller' | 'hook' | 'code'>
  /** Present when a controller needs PostgreSQL; set from a database check at each scrape. */
  databaseUp: Gauge | undefined
}

/** How often the event loop's delay is sampled, in milliseconds. */
export const EVENT_LOOP_SAMPLE_MS = 100

/** A registry per app instance, so that several apps (as in tests) never collide. */
export function createMetrics (database?: { state: () => Promise<{ status: string }> }): Metrics {
  const registry = new Registry()
  // Event-loop delay sampled every 100 ms, not prom-client's default 10: the 10 ms timer woke an idle server 100
  // times a second, 3.5 ms of CPU a second for nothing; at 100 ms a blocked loop still shows in every scrape.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })
  const hookDuration = new Histogram({
    name: 'metacontroller_hooks_duration_seconds',
    help: 'Duration of hook calls by controller, hook and outcome (sync: ok, or not_ready = answered with Ready=False; finalize: finalized = finalized=true, pending = finalized=false; either: not_modified = 304 to a request that carried its own ETag, rejected = 4xx, overloaded = 503 for want of memory for its body, aborted = the client closed the connection first, error = any other 5xx)',
    labelNames: ['controller', 'hook', 'outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry]
  })
  const driftRepairs = new Counter({
    name: 'metacontroller_hooks_drift_repairs_total',
    help: 'Syncs that repaired what a controller keeps outside Kubernetes (PostgresWriter: the row), found changed or missing since the controller last wrote it, by controller and drift (changed, missing)',
    labelNames: ['controller', 'drift'] as const,
    registers: [registry]
  })
  const answers = new Counter({
    name: 'metacontroller_hooks_answers_total',
    help: 'Hook answers with a body (200) by controller, hook and their Ready condition: its status (ready: True, False, Unknown) and reason (InvalidSpec, DatabaseUnavailable, RowWritten and the others each controller documents); a 304 carries no condition and is not counted here',
    labelNames: ['controller', 'hook', 'ready', 'reason'] as const,
    registers: [registry]
  })
  const refusals = new Counter({
    name: 'metacontroller_hooks_refusals_total',
    help: 'Hook calls refused, by controller, hook and HTTP status code (code): 400 not a hook request, 401 bearer token, 408 body too slow or stalled, 413 body too large, 415 not JSON, 422 a parent the hook cannot answer, 503 no memory for its body in time',
    labelNames: ['controller', 'hook', 'code'] as const,
    registers: [registry]
  })
  const databaseUp = database === undefined
    ? undefined
    : new Gauge({
      name: 'metacontroller_hooks_database_up',
      help: 'Whether PostgreSQL answered the last check (1) or not (0); a scrape checks again when the last check is older than HOOKS_DATABASE_CHECK_INTERVAL',
      registers: [registry],
      async collect () { this.set((await database.state()).status === 'up' ? 1 : 0) }
    })
  return { registry, hookDuration, driftRepairs, answers, refusals, databaseUp }
}
