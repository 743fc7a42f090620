import type pg from 'pg'
import type { Postgres } from './pool.js'
import { cancelRunningStatement } from './pg-internals.js'
import { mustDiscard } from './prepared-statements.js'

/**
 * One hook call's time in PostgreSQL, bounded as a whole: Metacontroller gives up on a call after its webhook
 * timeout and calls again, so a call that answers later is worse than one that answers "not yet".
 */

/** The call reached PG_HOOK_DEADLINE: what it ran was cancelled, and its transaction rolled back. */
export class DeadlineExceeded extends Error {
  constructor (readonly deadlineMs: number) {
    super(`the call did not finish within PG_HOOK_DEADLINE (${deadlineMs / 1000} s) of its arrival, so what it ran in PostgreSQL was cancelled and rolled back`)
    this.name = 'DeadlineExceeded'
  }
}

/**
 * Runs `work` on one pooled connection, within `io.deadlineMs` of `arrivedAt` (a `performance.now()` time): the time
 * the call's body took to arrive and waiting for a connection both count, so that the answer still reaches
 * Metacontroller before its webhook timeout. A call already past its deadline runs nothing. At the
 * deadline, the statement running is cancelled in PostgreSQL (a client that only stopped waiting would leave it
 * running, holding its locks; a cancel that does not arrive leaves it to the pool's statement_timeout, which the
 * deadline bounds), the connection is discarded, which rolls back its transaction, and DeadlineExceeded
 * is thrown. A connection whose work failed is discarded too: its session may be in any state; so is one whose prepared
 * statements failed (database/prepared-statements.ts).
 */
export async function withinDeadline<T> (io: Pick<Postgres, 'pool' | 'deadlineMs'>, work: (db: pg.PoolClient) => Promise<T>, arrivedAt = performance.now()): Promise<T> {
  const remainingMs = arrivedAt + io.deadlineMs - performance.now()
  if (remainingMs <= 0) throw new DeadlineExceeded(io.deadlineMs)
  let db: pg.PoolClient | undefined
  let timer: NodeJS.Timeout | undefined
  let passed = false
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      passed = true
      const exceeded = (): void => { reject(new DeadlineExceeded(io.deadlineMs)) }
      // Answering only once PostgreSQL took the cancel keeps the statement from committing after an answer that says
      // it did not: a lock it waited for may be released as soon as that answer is out.
      if (db === undefined) exceeded()
      else void cancelRunningStatement(db).then(exceeded)
    }, remainingMs)
  })
  try {
    const connecting = io.pool.connect()
    try {
      db = await Promise.race([connecting, expired])
    } catch (error) {
      // A connection that arrives after the deadline goes straight back.
      connecting.then((late) => { late.release() }, () => {})
      throw error
    }
    const working = work(db)
    try {
      const result = await Promise.race([working, expired])
      db.release(mustDiscard(db))
      return result
    } catch (error) {
      working.catch(() => {}) // it fails once its connection is discarded
      db.release(error instanceof Error ? error : true)
      // The cancel may end the statement before PostgreSQL closes the cancel's connection.
      throw passed ? new DeadlineExceeded(io.deadlineMs) : error
    }
  } finally {
    clearTimeout(timer)
  }
}
