import { readFileSync } from 'node:fs'
import { getHeapStatistics } from 'node:v8'
import { parseTokens, type BearerTokenSource } from '../http/bearer-token.js'
import { ConfigError, readSettings, type Environment, type Settings } from './config-schema.js'
import { connectionFromSettings, ConnectionSettingError, type Connection } from '../database/connection.js'
import type { DatabaseConfig } from '../database/pool.js'

/**
 * The configuration the server runs with, read once at start-up from the environment as hooks/runtime/config-schema.ts
 * defines it. Every problem is collected and reported together, naming the variable and what it accepts.
 */

export { ConfigError, type Environment }

export interface TlsConfig {
  certFile: string
  keyFile: string
  clientCaFile: string | undefined
}

export interface Config {
  port: Settings['PORT']
  /** Plain HTTP, always: /healthz, /readyz and /metrics for the kubelet and scrapers, whatever TLS the hook port asks. */
  probePort: Settings['HOOKS_PROBE_PORT']
  host: Settings['HOST']
  logLevel: Settings['LOG_LEVEL']
  bodyLimit: Settings['HOOKS_BODY_LIMIT']
  /** How long a request's body may take to arrive, from its headers to its last byte. */
  bodyTimeoutMs: number
  /** How long a hook call may wait for memory to hold or to parse its body. */
  admissionTimeoutMs: number
  shutdownTimeoutMs: number
  /** After SIGTERM, how long the listener stays open while readiness already answers 503. */
  shutdownDelayMs: number
  /** How old the last database check may be before /readyz or /metrics starts another. */
  databaseCheckIntervalMs: number
  database: DatabaseConfig
  bearerTokens: BearerTokenSource | undefined
  /** Every variable's value, as read, defaults applied: each controller reads its own from them (`configure`). */
  settings: Readonly<Record<string, unknown>>
  tls: TlsConfig | undefined
}

export function loadConfig (env: Environment = process.env, memory: ServerMemory = serverMemory()): Config {
  const { settings, problems } = readSettings(env)
  problems.push(...constraintProblems(settings))
  const bodyLimit = bodyLimitProblem(settings.HOOKS_BODY_LIMIT, memory)
  if (bodyLimit !== undefined) problems.push(bodyLimit)
  const bearerTokens = bearerTokensOf(settings, problems)
  let connection: Connection | undefined
  try {
    connection = connectionFromSettings(settings)
  } catch (error) {
    if (!(error instanceof ConnectionSettingError)) throw error
    problems.push(error.message)
  }
  if (problems.length > 0) throw new ConfigError(problems)

  const { HOOKS_TLS_CERT: certFile, HOOKS_TLS_KEY: keyFile } = settings
  return {
    port: settings.PORT,
    probePort: settings.HOOKS_PROBE_PORT,
    host: settings.HOST,
    logLevel: settings.LOG_LEVEL,
    bodyLimit: settings.HOOKS_BODY_LIMIT,
    bodyTimeoutMs: settings.HOOKS_BODY_TIMEOUT * 1000,
    admissionTimeoutMs: settings.HOOKS_ADMISSION_TIMEOUT * 1000,
    shutdownTimeoutMs: settings.HOOKS_SHUTDOWN_TIMEOUT * 1000,
    shutdownDelayMs: settings.HOOKS_SHUTDOWN_DELAY * 1000,
    databaseCheckIntervalMs: settings.HOOKS_DATABASE_CHECK_INTERVAL * 1000,
    database: {
      connection,
      poolMax: settings.PG_POOL_MAX,
      connectTimeoutMs: settings.PG_CONNECT_TIMEOUT * 1000,
      statementTimeoutMs: settings.PG_STATEMENT_TIMEOUT * 1000,
      hookDeadlineMs: settings.PG_HOOK_DEADLINE * 1000,
      preparedStatements: settings.PG_PREPARED_STATEMENTS
    },
    bearerTokens,
    settings,
    tls: certFile !== undefined && keyFile !== undefined ? { certFile, keyFile, clientCaFile: settings.HOOKS_TLS_CLIENT_CA } : undefined
  }
}

/** The most memory the server may use, and what sets it. */
export interface ServerMemory {
  bytes: number
  what: string
}

/** V8's heap limit, or the container's memory limit (its cgroup's) when that is smaller. */
export function serverMemory (): ServerMemory {
  const heap = getHeapStatistics().heap_size_limit
  const container = process.constrainedMemory()
  return container > 0 && container < heap
    ? { bytes: container, what: 'the container\'s memory limit' }
    : { bytes: heap, what: 'V8\'s heap limit (--max-old-space-size)' }
}

/**
 * What bodies and answers at HOOKS_BODY_LIMIT take at most, in limits: the bodies held at once are four limits'
 * worth (http/body-admission.ts), each up to three times its size once parsed (the costliest body of 16 MiB within
 * the bound on values left 48 MiB), and one answer of up to the limit is serialised at a time.
 */
const MEMORY_PER_BODY_LIMIT = 16

const MiB = 1024 ** 2

/** Why the server cannot hold bodies and answers at `limit` with `memory`, in one line that says what to set. */
function bodyLimitProblem (limit: number, memory: ServerMemory): string | undefined {
  if (limit * MEMORY_PER_BODY_LIMIT <= memory.bytes) return undefined
  return `HOOKS_BODY_LIMIT=${limit} bytes is more than this server can hold: bodies and answers at that limit take up to ${MEMORY_PER_BODY_LIMIT} times it, ` +
    `${Math.ceil(limit * MEMORY_PER_BODY_LIMIT / MiB)} MiB, and ${memory.what} is ${Math.floor(memory.bytes / MiB)} MiB: ` +
    `set HOOKS_BODY_LIMIT to at most ${Math.floor(memory.bytes / MEMORY_PER_BODY_LIMIT / MiB)}Mi, or raise the memory limit and --max-old-space-size with it (docs/operations.md, Memory)`
}

/** What the settings' values must be together. */
function constraintProblems (settings: Settings): string[] {
  const problems: string[] = []
  if ((settings.HOOKS_TLS_CERT === undefined) !== (settings.HOOKS_TLS_KEY === undefined)) problems.push('HOOKS_TLS_CERT and HOOKS_TLS_KEY: set both (PEM file paths) or neither')
  if (settings.HOOKS_TLS_CLIENT_CA !== undefined && settings.HOOKS_TLS_CERT === undefined) problems.push('HOOKS_TLS_CLIENT_CA needs HOOKS_TLS_CERT and HOOKS_TLS_KEY: mutual TLS only works over HTTPS')
  if (settings.HOOKS_BEARER_TOKEN !== undefined && settings.HOOKS_BEARER_TOKEN_FILE !== undefined) problems.push('HOOKS_BEARER_TOKEN and HOOKS_BEARER_TOKEN_FILE: set one of them, not both')
  if (settings.HOOKS_PROBE_PORT !== 0 && settings.HOOKS_PROBE_PORT === settings.PORT) {
    problems.push(`HOOKS_PROBE_PORT=${settings.HOOKS_PROBE_PORT} is PORT too: the probe port serves health and metrics over plain HTTP beside the hook port, so give it a port of its own`)
  }
  if (settings.HOOKS_SHUTDOWN_DELAY >= settings.HOOKS_SHUTDOWN_TIMEOUT) {
    problems.push('HOOKS_SHUTDOWN_DELAY must be shorter than HOOKS_SHUTDOWN_TIMEOUT: the delay is part of the shutdown time')
  }
  return problems
}

/** The accepted bearer tokens, read from HOOKS_BEARER_TOKEN_FILE now; a problem is added to `problems`. */
function bearerTokensOf (settings: Settings, problems: string[]): BearerTokenSource | undefined {
  const { HOOKS_BEARER_TOKEN: token, HOOKS_BEARER_TOKEN_FILE: file } = settings
  try {
    if (token !== undefined && file !== undefined) return undefined
    if (file !== undefined) return { variable: 'HOOKS_BEARER_TOKEN_FILE', file, tokens: parseTokens(readFileSync(file, 'utf8'), `HOOKS_BEARER_TOKEN_FILE ${file}`) }
    if (token !== undefined) return { variable: 'HOOKS_BEARER_TOKEN', file: undefined, tokens: parseTokens(token, 'HOOKS_BEARER_TOKEN') }
  } catch (error) {
    problems.push(error instanceof Error && 'code' in error ? `HOOKS_BEARER_TOKEN_FILE=${file}: cannot read it (${String(error.code)})` : (error as Error).message)
  }
  return undefined
}
