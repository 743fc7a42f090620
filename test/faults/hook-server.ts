import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import { startPostgres, type PostgresProcess } from '../../dev/postgres-process.js'
import { deployment } from '../../dev/deployment.js'
import { spawnServer, startServer, type ServerProcess, type ServerProcessOptions } from '../../dev/server-process.js'

/** The hook server as every fault test runs it: its own process, short database timeouts, a schema of the test's own. */

/** The database timeouts every fault test configures, in seconds (PG_CONNECT_TIMEOUT, PG_STATEMENT_TIMEOUT). */
export const CONNECT_TIMEOUT_SECONDS = 2
export const STATEMENT_TIMEOUT_SECONDS = 2

/**
 * The longest a hook call may take with those timeouts. A call answers at the first step that fails: a connect (or
 * a wait for a pool slot) ended by the connect timeout, or a statement ended by the statement or lock timeout, or
 * by the pool's client-side backstop one second later. Plus three seconds for a loaded machine: 8 s, below
 * Metacontroller's 10 s webhook timeout.
 */
export const CALL_BOUND_MS = (CONNECT_TIMEOUT_SECONDS + STATEMENT_TIMEOUT_SECONDS + 1 + 3) * 1000

/**
 * Starts the hook server with the given database and schema (and these timeouts), on `port` when given, as the
 * Deployment runs it when `deployed` (its Node.js flags and the runtime's environment, dev/deployment.ts), from
 * `checkout` when given (another version's files); it is stopped after the test.
 */
export async function startHookServer (t: TestContext, env: { DATABASE_URL: string, PG_SCHEMA: string } & Record<string, string>, options: { port?: number, deployed?: boolean, checkout?: string } = {}): Promise<ServerProcess> {
  const { checkout, deployed = false, ...rest } = options
  const shipped = deployed ? deployment() : { nodeArgs: [], runtimeEnv: {} }
  const settings = { ...rest, nodeArgs: shipped.nodeArgs, env: { ...shipped.runtimeEnv, PG_CONNECT_TIMEOUT: String(CONNECT_TIMEOUT_SECONDS), PG_STATEMENT_TIMEOUT: String(STATEMENT_TIMEOUT_SECONDS), ...env } }
  if (checkout !== undefined) return await startEarlierServer(t, { ...settings, cwd: checkout, entry: join(checkout, 'hooks', 'server.ts') })
  const server = await startServer(settings)
  t.after(async () => { await server.stop() })
  return server
}

/**
 * An earlier version, on ports the system picks. Its "hook server ready" line names only the probe port: the hook
 * port is the one of the first "Server listening at" line fastify logs, since it listens before the probe port.
 */
async function startEarlierServer (t: TestContext, options: ServerProcessOptions): Promise<ServerProcess> {
  const server = spawnServer(options)
  t.after(async () => { await server.stop() })
  await server.logged('hook server ready', 30_000)
  const port = /"msg":"Server listening at http:\/\/127\.0\.0\.1:(\d+)"/.exec(server.output())?.[1]
  if (port === undefined) throw new Error(`the earlier version logged no "Server listening at" line with its port:\n${server.output()}`)
  const url = `http://127.0.0.1:${port}`
  return Object.create(server, { url: { value: url }, port: { value: Number(port) } }) as ServerProcess
}

/** A schema name of the test's own: the server creates it with the first table. */
export function testSchema (): string {
  return `faults_${randomUUID().slice(0, 8)}`
}

export interface FaultRig {
  postgres: PostgresProcess
  schema: string
  /** The hook server's environment: to start it again. */
  env: { DATABASE_URL: string, PG_SCHEMA: string } & Record<string, string>
  server: ServerProcess
}

/** A PostgreSQL of the test's own, and the hook server on a schema of its own there (with `env` added); both go after the test. */
export async function startRig (t: TestContext, env: Record<string, string> = {}): Promise<FaultRig> {
  const postgres = await startPostgres()
  t.after(async () => { await postgres.remove() })
  const schema = testSchema()
  const rigEnv = { DATABASE_URL: postgres.connectionString, PG_SCHEMA: schema, ...env }
  return { postgres, schema, env: rigEnv, server: await startHookServer(t, rigEnv) }
}

/** What the hook server's PostgreSQL backends that match `condition` (on pg_stat_activity) run, one line each. */
export async function hookBackends (client: pg.Client, condition: string): Promise<string[]> {
  const result = await client.query<{ query: string }>(`SELECT query FROM pg_stat_activity WHERE application_name = 'metacontroller-hooks' AND ${condition}`)
  return result.rows.map((row) => row.query.replace(/\s+/g, ' ').slice(0, 100))
}

/** Polls the hook backends that match `condition` until `done` holds for them, or `timeoutMs` passed; the last seen. */
export async function pollHookBackends (client: pg.Client, condition: string, done: (backends: string[]) => boolean, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs
  let backends = await hookBackends(client, condition)
  while (!done(backends) && Date.now() < deadline) {
    await sleep(20)
    backends = await hookBackends(client, condition)
  }
  return backends
}
