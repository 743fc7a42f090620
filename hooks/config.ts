import { readFileSync } from 'node:fs'
import { parseTokens, type BearerTokenSource } from './bearer-token.js'
import { WEBHOOK_TIMEOUT_SECONDS } from './controller.js'

/**
 * Configuration from the environment, validated once at start-up. Every problem is collected and reported
 * together, naming the variable and what it accepts.
 */

export interface TlsConfig {
  certFile: string
  keyFile: string
  clientCaFile: string | undefined
}

export interface PostgresPolicy {
  schema: string
  autoCreateTables: boolean
  /** Tables custom resources may write; undefined means any valid name. */
  tableAllowlist: ReadonlySet<string> | undefined
}

export interface DatabaseConfig {
  poolMax: number
  connectTimeoutMs: number
  statementTimeoutMs: number
  /** What one hook call may spend on PostgreSQL in all, from its start to its answer. */
  hookDeadlineMs: number
  /** Send PostgresWriter's statements as named prepared statements (see database/statements.ts). */
  preparedStatements: boolean
  policy: PostgresPolicy
}

export interface Config {
  port: number
  /** Plain HTTP, always: /healthz, /readyz and /metrics for the kubelet and scrapers, whatever TLS the hook port asks. */
  probePort: number
  host: string
  logLevel: string
  bodyLimit: number
  shutdownTimeoutMs: number
  /** After SIGTERM, how long the listener stays open while readiness already answers 503. */
  shutdownDelayMs: number
  /** How old the last database check may be before /readyz or /metrics starts another. */
  databaseCheckIntervalMs: number
  database: DatabaseConfig
  bearerTokens: BearerTokenSource | undefined
  tls: TlsConfig | undefined
}

export type Environment = Record<string, string | undefined>

export class ConfigError extends Error {
  constructor (readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`)
    this.name = 'ConfigError'
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const SQL_IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/
const SIZE_UNITS: Record<string, number> = { '': 1, K: 1e3, Ki: 1024, M: 1e6, Mi: 1024 ** 2, G: 1e9, Gi: 1024 ** 3 }

export function isSqlIdentifier (name: string): boolean {
  return SQL_IDENTIFIER.test(name)
}

export function loadConfig (env: Environment = process.env): Config {
  const problems: string[] = []
  const value = (name: string): string | undefined => {
    const raw = env[name]
    return raw === undefined || raw.trim() === '' ? undefined : raw.trim()
  }
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = value(name)
    if (raw === undefined) return fallback
    const parsed = Number(raw)
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
      problems.push(`${name}='${raw}': expected a whole number from ${min} to ${max}`)
      return fallback
    }
    return parsed
  }
  const boolean = (name: string, fallback: boolean): boolean => {
    const raw = value(name)?.toLowerCase()
    if (raw === undefined) return fallback
    if (['true', '1', 'yes'].includes(raw)) return true
    if (['false', '0', 'no'].includes(raw)) return false
    problems.push(`${name}='${raw}': expected true or false`)
    return fallback
  }
  /** Seconds, possibly with a fraction, as milliseconds. */
  const seconds = (name: string, fallback: number, below: number, why: string): number => {
    const raw = value(name)
    if (raw === undefined) return fallback * 1000
    const parsed = /^\d+(\.\d{1,3})?$/.test(raw) ? Number(raw) : NaN
    if (!(parsed > 0 && parsed < below)) {
      problems.push(`${name}='${raw}': expected seconds above 0 and below ${below} (such as 6 or 4.5): ${why}`)
      return fallback * 1000
    }
    return parsed * 1000
  }
  const size = (name: string, fallback: number): number => {
    const raw = value(name)
    if (raw === undefined) return fallback
    const match = /^(\d+)(K|Ki|M|Mi|G|Gi)?B?$/.exec(raw)
    const bytes = match === null ? NaN : Number(match[1]) * (SIZE_UNITS[match[2] ?? ''] ?? NaN)
    if (!Number.isSafeInteger(bytes) || bytes < 1024) {
      problems.push(`${name}='${raw}': expected a size of at least 1024 bytes, such as 16777216 or 16Mi`)
      return fallback
    }
    return bytes
  }

  const logLevel = value('LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL='${logLevel}': expected one of ${LOG_LEVELS.join(', ')}`)

  const schema = value('PG_SCHEMA') ?? 'public'
  if (!isSqlIdentifier(schema)) problems.push(`PG_SCHEMA='${schema}': expected a lowercase SQL identifier (letters, digits, _; at most 63)`)

  let tableAllowlist: Set<string> | undefined
  const allowlist = value('PG_TABLE_ALLOWLIST')
  if (allowlist !== undefined) {
    tableAllowlist = new Set(allowlist.split(',').map((t) => t.trim()).filter((t) => t !== ''))
    for (const table of tableAllowlist) {
      if (!isSqlIdentifier(table)) problems.push(`PG_TABLE_ALLOWLIST: ${JSON.stringify(table)} is not a lowercase SQL identifier`)
    }
  }

  const tlsCert = value('HOOKS_TLS_CERT')
  const tlsKey = value('HOOKS_TLS_KEY')
  const clientCa = value('HOOKS_TLS_CLIENT_CA')
  if ((tlsCert === undefined) !== (tlsKey === undefined)) problems.push('HOOKS_TLS_CERT and HOOKS_TLS_KEY: set both (PEM file paths) or neither')
  if (clientCa !== undefined && tlsCert === undefined) problems.push('HOOKS_TLS_CLIENT_CA needs HOOKS_TLS_CERT and HOOKS_TLS_KEY: mutual TLS only works over HTTPS')

  let bearerTokens: BearerTokenSource | undefined
  const token = value('HOOKS_BEARER_TOKEN')
  const tokenFile = value('HOOKS_BEARER_TOKEN_FILE')
  try {
    if (token !== undefined && tokenFile !== undefined) {
      problems.push('HOOKS_BEARER_TOKEN and HOOKS_BEARER_TOKEN_FILE: set one of them, not both')
    } else if (tokenFile !== undefined) {
      const text = readFileSync(tokenFile, 'utf8')
      bearerTokens = { variable: 'HOOKS_BEARER_TOKEN_FILE', file: tokenFile, tokens: parseTokens(text, `HOOKS_BEARER_TOKEN_FILE ${tokenFile}`) }
    } else if (token !== undefined) {
      bearerTokens = { variable: 'HOOKS_BEARER_TOKEN', file: undefined, tokens: parseTokens(token, 'HOOKS_BEARER_TOKEN') }
    }
  } catch (error) {
    problems.push(error instanceof Error && 'code' in error ? `HOOKS_BEARER_TOKEN_FILE=${tokenFile}: cannot read it (${String(error.code)})` : (error as Error).message)
  }

  const config: Config = {
    port: integer('PORT', 8080, 0, 65535),
    probePort: integer('HOOKS_PROBE_PORT', 8081, 0, 65535),
    host: value('HOST') ?? '0.0.0.0',
    logLevel,
    bodyLimit: size('HOOKS_BODY_LIMIT', 16 * 1024 ** 2),
    shutdownTimeoutMs: integer('HOOKS_SHUTDOWN_TIMEOUT', 25, 1, 3600) * 1000,
    shutdownDelayMs: integer('HOOKS_SHUTDOWN_DELAY', 3, 0, 3600) * 1000,
    databaseCheckIntervalMs: integer('HOOKS_DATABASE_CHECK_INTERVAL', 5, 1, 3600) * 1000,
    database: {
      poolMax: integer('PG_POOL_MAX', 10, 1, 1000),
      connectTimeoutMs: integer('PG_CONNECT_TIMEOUT', 2, 1, 60) * 1000,
      statementTimeoutMs: integer('PG_STATEMENT_TIMEOUT', 3, 1, 600) * 1000,
      hookDeadlineMs: seconds('PG_HOOK_DEADLINE', 6, WEBHOOK_TIMEOUT_SECONDS,
        `a PostgresWriter call must answer before Metacontroller gives up on it (webhook timeout ${WEBHOOK_TIMEOUT_SECONDS}s in the generated controllers)`),
      preparedStatements: boolean('PG_PREPARED_STATEMENTS', true),
      policy: { schema, autoCreateTables: boolean('PG_AUTO_CREATE_TABLES', true), tableAllowlist }
    },
    bearerTokens,
    tls: tlsCert !== undefined && tlsKey !== undefined ? { certFile: tlsCert, keyFile: tlsKey, clientCaFile: clientCa } : undefined
  }
  if (config.probePort !== 0 && config.probePort === config.port) {
    problems.push(`HOOKS_PROBE_PORT=${config.probePort} is PORT too: the probe port serves health and metrics over plain HTTP beside the hook port, so give it a port of its own`)
  }
  if (config.shutdownDelayMs >= config.shutdownTimeoutMs) {
    problems.push('HOOKS_SHUTDOWN_DELAY must be shorter than HOOKS_SHUTDOWN_TIMEOUT: the delay is part of the shutdown time')
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}
