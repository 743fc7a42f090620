import { randomBytes } from 'node:crypto'
import type { TestContext } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import type { AdmissionClock } from '../../hooks/http/hook-call.js'
import { build as buildApp } from '../../hooks/runtime/build.js'
import { loadConfig, type Config, type Environment } from '../../hooks/runtime/config.js'
import type { Controller } from '../../hooks/framework/controller.js'
import { connectionFromUrl } from '../../hooks/database/connection.js'
import { testDatabaseUrl } from './database-url.js'

import { NOW } from '../../dev/hook-answer.js'

export { NOW }

export interface TestApp {
  app: FastifyInstance
  config: Config
  /** The pool the app uses: none when no controller needs PostgreSQL, or with `databaseUrl: false`. */
  pool: pg.Pool | undefined
  /** A schema of this test's own, dropped afterwards. */
  schema: string
  lifecycle: { draining: boolean }
  /** The app's log lines so far, parsed; with `logs: true` only. */
  logs: () => LogLine[]
}

export interface LogLine {
  level: number
  msg: string
  [field: string]: unknown
}

export interface BuildOptions {
  env?: Environment
  /** Defaults to the test database (DATABASE_URL, set by scripts/run-tests.ts), used when a controller needs PostgreSQL. */
  databaseUrl?: string | false
  controllers?: readonly Controller[]
  /** The time stamped on new conditions. Default: NOW. */
  clock?: () => Date
  /** Keep the log lines, at LOG_LEVEL info unless `env` says otherwise. */
  logs?: boolean
  /** The clock and ticker of the admission of bodies (test/helpers/fake-clock.ts); the process's by default. */
  admissionClock?: AdmissionClock
}

/**
 * The URL of an empty database of the test's own, dropped after it: for answers that name the schema `public`, as a
 * first `npm start` gives them, where the usual per-test schema would show in PostgresWriter's messages.
 */
export async function emptyDatabase (t: TestContext, purpose: string): Promise<string> {
  const admin = new pg.Client({ connectionString: testDatabaseUrl() })
  await admin.connect()
  const name = `${purpose}_${randomBytes(6).toString('hex')}`
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } catch (error) {
    await admin.end()
    throw new Error(`the ${purpose} test needs an empty database with schema public and could not create one (${(error as Error).message}): give DATABASE_URL's user CREATEDB, or unset DATABASE_URL to use the embedded PostgreSQL`)
  }
  // FORCE: whichever clean-up runs first, a pool still connected does not keep the database.
  t.after(async () => {
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`)
    await admin.end()
  })
  const url = new URL(testDatabaseUrl())
  url.pathname = `/${name}`
  return url.toString()
}

/** Builds the app as the server does (hooks/runtime/build.ts), on a fresh schema, closed (and its schema dropped) after the test. */
export async function build (t: TestContext, options: BuildOptions = {}): Promise<TestApp> {
  const schema = options.env?.PG_SCHEMA ?? `test_${randomBytes(6).toString('hex')}`
  const config = loadConfig({ LOG_LEVEL: options.logs === true ? 'info' : 'silent', ...options.env, PG_SCHEMA: schema })
  const lines: LogLine[] = []
  const { databaseUrl } = options
  const { app: fastify, postgres, lifecycle } = await buildApp({
    config,
    controllers: options.controllers,
    // Asked for only where a controller needs it: `npm run check` runs composites' tests without a database.
    database: databaseUrl === false ? undefined : async () => connectionFromUrl(databaseUrl ?? testDatabaseUrl(), 'test database'),
    clock: options.clock ?? (() => NOW),
    admissionClock: options.admissionClock,
    logStream: options.logs === true ? { write: (line: string) => { lines.push(JSON.parse(line) as LogLine) } } : undefined
  })
  const pool = postgres?.pool
  t.after(async () => {
    await fastify.close()
    if (pool !== undefined) {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {})
      await pool.end()
    }
  })
  return { app: fastify, config, pool, schema, lifecycle, logs: () => lines }
}

/** POSTs `text` as it is (not re-encoded, as `payload: object` would be) with Content-Type: application/json. */
export async function postText (app: FastifyInstance, url: string, text: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url, payload: text, headers: { 'content-type': 'application/json', ...headers } })
}
