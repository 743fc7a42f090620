import { createHash } from 'node:crypto'
import pg from 'pg'
import type { Statement, Value } from './pg-internals.js'

/**
 * Named prepared statements (PG_PREPARED_STATEMENTS). A statement sent with a name is parsed and planned by
 * PostgreSQL once per connection; every later call only binds and executes it, which is most of what the hook's
 * statements cost the database. The name is a hash of the text: stable across calls and processes, and a name found
 * on a connection always holds exactly that text, even where a pooler hands one server connection to many clients.
 */

/**
 * The most statements one connection prepares; further ones run unnamed on it. The hook prepares a handful per
 * table, so this bounds what many tables leave on the server (PostgreSQL keeps each until its connection ends).
 */
export const MAX_PREPARED_PER_CONNECTION = 64

/** The names each connection was sent: counted against MAX_PREPARED_PER_CONNECTION. */
const sent = new WeakMap<pg.ClientBase, Set<string>>()

/** Connections on which a prepared statement failed: they run unnamed statements until they are discarded. */
const broken = new WeakSet<pg.ClientBase>()

/**
 * `build()`'s value for `key`, kept in `memo` until it holds `max` values, when it starts afresh: statement texts and
 * names are a handful per table, and a server that saw many tables keeps no more than `max`.
 */
export function remembered (memo: Map<string, string>, max: number, key: string, build: () => string): string {
  let value = memo.get(key)
  if (value === undefined) {
    if (memo.size >= max) memo.clear()
    memo.set(key, value = build())
  }
  return value
}

/** The names already given, by text. */
const names = new Map<string, string>()
const MAX_NAMES = 1024

function statementName (text: string): string {
  return remembered(names, MAX_NAMES, text, () => `hooks_${createHash('sha1').update(text).digest('hex')}`)
}

/** `text` with `values`, named when `prepared` and the connection has room for it. */
export function statement (db: pg.ClientBase, prepared: boolean, text: string, values: readonly Value[] = []): Statement {
  if (!prepared || broken.has(db)) return { text, values }
  const name = statementName(text)
  let names = sent.get(db)
  if (names === undefined) sent.set(db, (names = new Set()))
  if (!names.has(name)) {
    if (names.size >= MAX_PREPARED_PER_CONNECTION) return { text, values }
    names.add(name)
  }
  return { name, text, values }
}

/**
 * Whether `error` says that a connection's prepared statement is not what the driver took it for: gone (26000, as
 * when a pooler without prepared-statement support switched server connections, or after DISCARD/DEALLOCATE),
 * already there (42P05, the same), or planned for a result of another shape than the table now gives (0A000).
 */
export function preparedStatementFailed (error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError)) return false
  return error.code === '26000' || error.code === '42P05' ||
    (error.code === '0A000' && /cached plan must not change result type/.test(error.message))
}

/** From now on `db` runs every statement unnamed; the call's end discards it (see `mustDiscard`). */
export function markBroken (db: pg.ClientBase): void {
  broken.add(db)
}

/** A connection whose prepared statements failed: it goes, so that no later call meets them. */
export function mustDiscard (db: pg.ClientBase): boolean {
  return broken.has(db)
}
