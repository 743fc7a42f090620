import type { ClientConfig } from 'pg'
import { ConfigError, type Environment } from '../config.js'

export interface Connection {
  /** What pg gets; empty when pg reads libpq's PG* variables itself. */
  clientConfig: ClientConfig
  /** Where the connection points, for logs: never contains the password. */
  description: string
}

const LIBPQ_VARIABLES = ['PGHOST', 'PGHOSTADDR', 'PGPORT', 'PGDATABASE', 'PGUSER', 'PGPASSWORD', 'PGSERVICE']
const PSQL_VARIABLES = ['PSQL_HOST', 'PSQL_PORT', 'PSQL_DBNAME', 'PSQL_USER', 'PSQL_PASSWORD']

const set = (env: Environment, name: string): boolean => (env[name] ?? '').trim() !== ''

/**
 * The database settings, first match wins: DATABASE_URL; the original operator's PSQL_* variables;
 * libpq's PG* variables. Undefined when none is set.
 */
export function connectionFromEnvironment (env: Environment = process.env): Connection | undefined {
  const url = env.DATABASE_URL?.trim()
  if (url !== undefined && url !== '') {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new ConfigError(['DATABASE_URL: not a URL; expected postgres://user:password@host:5432/database'])
    }
    if (!['postgres:', 'postgresql:'].includes(parsed.protocol)) {
      throw new ConfigError([`DATABASE_URL: scheme ${parsed.protocol} is not postgres: or postgresql:`])
    }
    return { clientConfig: { connectionString: url }, description: `${describeUrl(parsed)} (DATABASE_URL)` }
  }

  if (PSQL_VARIABLES.some((name) => set(env, name))) {
    const port = Number(env.PSQL_PORT ?? '5432')
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ConfigError([`PSQL_PORT=${JSON.stringify(env.PSQL_PORT)}: expected a port number from 1 to 65535`])
    }
    const host = env.PSQL_HOST ?? 'localhost'
    const database = env.PSQL_DBNAME ?? 'postgres'
    const user = env.PSQL_USER ?? 'postgres'
    return {
      clientConfig: { host, port, database, user, password: env.PSQL_PASSWORD },
      description: `postgres://${user}@${host}:${port}/${database} (PSQL_* variables)`
    }
  }

  if (LIBPQ_VARIABLES.some((name) => set(env, name))) {
    const host = env.PGHOST ?? env.PGHOSTADDR ?? 'localhost'
    return {
      clientConfig: {},
      description: `postgres://${env.PGUSER ?? 'postgres'}@${host}:${env.PGPORT ?? '5432'}/${env.PGDATABASE ?? env.PGUSER ?? 'postgres'} (PG* variables)`
    }
  }
  return undefined
}

/** A connection URL with its password masked. */
function describeUrl (url: URL): string {
  const masked = new URL(url.href)
  if (masked.password !== '') masked.password = '***'
  return masked.href
}
