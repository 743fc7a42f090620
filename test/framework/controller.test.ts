import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { configure, hookNames, ioFor, needed, type CompositeController, type HookContext } from '../../hooks/framework/controller.js'
import type { PostgresNeed } from '../../hooks/database/pool.js'
import { bookStore } from '../../hooks/bookstore/index.js'
import { controllers } from '../../hooks/controllers.js'
import { podSet } from '../../hooks/podset/index.js'
import type { podSetResource } from '../../hooks/podset/resource.js'
import { syncPodSet } from '../../hooks/podset/sync.js'
import { postgresWriter } from '../../hooks/postgres-writer/index.js'
import { pulsarConsumer } from '../../hooks/pulsar-consumer/index.js'
import { loadConfig } from '../../hooks/runtime/config.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'

/** Every value reachable from `value`, however deep. */
function reachable (value: unknown, seen = new Set<unknown>()): Set<unknown> {
  if (typeof value !== 'object' || value === null || seen.has(value)) return seen
  seen.add(value)
  for (const field of Object.values(value)) reachable(field, seen)
  return seen
}

test('a composite\'s hook context holds no database, at compile time and at run time', async (t) => {
  const contexts: Array<HookContext<typeof podSetResource>> = []
  const watched = {
    ...podSet,
    hooks: {
      sync: (request: Parameters<typeof syncPodSet>[0], context: HookContext<typeof podSetResource>) => {
        contexts.push(context)
        // @ts-expect-error a controller that declares no I/O has no database in its context
        assert.equal(context.io.postgres, undefined)
        return syncPodSet(request, context)
      }
    }
  }
  // The app is given PostgreSQL, for PostgresWriter; the composite still gets none of it.
  const { app, pool } = await build(t, { controllers: [postgresWriter, watched] })
  assert.ok(pool instanceof pg.Pool)
  const response = await app.inject({ method: 'POST', url: '/podset/sync', payload: fixture('podset', 'first-sync') })
  assert.equal(response.statusCode, 200)
  const [context] = contexts
  assert.ok(context !== undefined)
  assert.deepEqual(context.io, {})
  assert.ok(![...reachable(context)].some((value) => value instanceof pg.Pool || value === pool), 'no pool is reachable from the context')
})

test('a controller\'s connect runs once per server, with the I/O it declared, and its hooks get what it built', async (t) => {
  const connected: unknown[] = []
  const seen: unknown[] = []
  const counting: CompositeController<typeof podSetResource, PostgresNeed, { calls: number[] }> = {
    ...podSet,
    needs: ['postgres'],
    connect: (io) => {
      connected.push(io)
      return { calls: [] }
    },
    hooks: {
      sync: (request, context) => {
        context.io.calls.push(1)
        seen.push(context.io)
        return syncPodSet(request, { ...context, io: {} })
      }
    }
  }
  const { app, pool } = await build(t, { controllers: [counting] })
  for (let i = 0; i < 3; i++) {
    const response = await app.inject({ method: 'POST', url: '/podset/sync', payload: fixture('podset', 'first-sync') })
    assert.equal(response.statusCode, 200)
  }
  assert.equal(connected.length, 1, 'connected once')
  assert.deepEqual(Object.keys(connected[0] as object), ['postgres'])
  assert.equal((connected[0] as { postgres: { pool: unknown } }).postgres.pool, pool)
  assert.equal(new Set(seen).size, 1, 'every call got the same io')
  assert.deepEqual(seen[0], { calls: [1, 1, 1] })
})

test('a controller\'s own settings reach its connect once the server has configured it with its configuration; unconfigured, it is not connected', async (t) => {
  const { pool } = await build(t, { controllers: [postgresWriter] })
  assert.ok(pool instanceof pg.Pool)
  const postgres = { pool, description: 'the test database', conceal: (text: string) => text, deadlineMs: 6000, preparedStatements: false }
  assert.throws(() => ioFor(postgresWriter, { postgres }), /^Error: controller postgres-writer has settings of its own: configure it with the server's configuration first$/)
  const configured = configure(postgresWriter, loadConfig({ PG_SCHEMA: 'school', PG_TABLE_ALLOWLIST: 'students' }).settings)
  assert.equal(configured.settings, undefined)
  const io = ioFor(configured, { postgres }) as { tables: unknown }
  assert.deepEqual(io.tables, { schema: 'school', autoCreateTables: true, tableAllowlist: new Set(['students']) })
  assert.equal(configure(podSet, loadConfig({}).settings), podSet, 'a controller without settings is itself')
})

test('controllers declare the I/O they need: PostgresWriter PostgreSQL, the composites none', () => {
  const composites = [bookStore, podSet, pulsarConsumer]
  assert.deepEqual(postgresWriter.needs, ['postgres'])
  for (const composite of composites) assert.deepEqual(composite.needs, [], composite.name)
  assert.deepEqual([...needed(composites)], [])
  assert.deepEqual([...needed(controllers)], ['postgres'])
})

test('a controller has a finalize hook exactly when it defines one', () => {
  assert.deepEqual(hookNames(postgresWriter), ['sync', 'finalize'])
  for (const composite of [bookStore, podSet, pulsarConsumer]) assert.deepEqual(hookNames(composite), ['sync'], composite.name)
  assert.deepEqual(hookNames({ ...podSet, hooks: { sync: syncPodSet, finalize: syncPodSet } }), ['sync', 'finalize'])
})
