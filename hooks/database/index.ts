/**
 * PostgreSQL for a controller: everything a controller under hooks/ imports of this folder, and the only module of it
 * that it imports. A controller that imports it declares `needs: ['postgres']`, and is given `PostgresNeed`. This
 * folder knows no controller: what a controller writes, and where, is its own.
 */

export { DeadlineExceeded, withinDeadline } from './deadline.js'
export { runBatch, type StatementResult, type Value } from './pg-internals.js'
export type { Postgres, PostgresNeed } from './pool.js'
export { markBroken, mustDiscard, preparedStatementFailed, remembered, statement } from './prepared-statements.js'
export { defineStatement, type StatementDefinition } from './sql.js'
