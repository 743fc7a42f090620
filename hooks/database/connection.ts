import type { ClientConfig } from 'pg'
import { ConfigError, type Environment } from '../config.js'

export interface Connection {
  /** What pg gets; empty when pg reads libpq's PG* variables itself. */
  clientConfig: ClientConfig
  /**
   * Where the connection points, for logs and messages: built from the host, port, database and user alone, so that
   * nothing else in the settings (a password, in whatever place) can reach it.
   */
  description: string
  /** Removes every password the settings hold from a text, such as a driver's message, before it is shown anywhere. */
  conceal: (text: string) => string
}

const LIBPQ_VARIABLES = ['PGHOST', 'PGHOSTADDR', 'PGPORT', 'PGDATABASE', 'PGUSER', 'PGPASSWORD', 'PGSERVICE']
const PSQL_VARIABLES = ['PSQL_HOST', 'PSQL_PORT', 'PSQL_DBNAME', 'PSQL_USER', 'PSQL_PASSWORD']
/** libpq's other connection-string form, `host=db port=5432 password=…`: a first word followed by `=`. */
const KEY_VALUE = /^\s*[a-z_]+\s*=/

const set = (env: Environment, name: string): boolean => (env[name] ?? '').trim() !== ''

/**
 * The database settings, first match wins: DATABASE_URL; the original operator's PSQL_* variables;
 * libpq's PG* variables. Undefined when none is set.
 */
export function connectionFromEnvironment (env: Environment = process.env): Connection | undefined {
  // pg falls back to PGPASSWORD whenever the settings it is given hold no password.
  const fallbackPassword = env.PGPASSWORD
  const url = env.DATABASE_URL?.trim()
  if (url !== undefined && url !== '') return connectionFromUrl(url, 'DATABASE_URL', env)

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
      description: `${describe({ user, host, port: String(port), database })} (PSQL_* variables)`,
      conceal: concealer([env.PSQL_PASSWORD, fallbackPassword])
    }
  }

  if (LIBPQ_VARIABLES.some((name) => set(env, name))) {
    return {
      clientConfig: {},
      description: `${describe({ user: env.PGUSER, host: env.PGHOST ?? env.PGHOSTADDR, port: env.PGPORT, database: env.PGDATABASE ?? env.PGUSER })} (PG* variables)`,
      conceal: concealer([fallbackPassword])
    }
  }
  return undefined
}

/**
 * The connection for a `postgres://` URL, from `source` (DATABASE_URL, or where else it came from). `env` gives what
 * pg falls back to for what the URL leaves out.
 */
export function connectionFromUrl (url: string, source: string, env: Environment = process.env): Connection {
  if (KEY_VALUE.test(url)) {
    throw new ConfigError([`${source}: a key/value connection string (host=… password=…) is not supported; write it as a URL, postgres://user:password@host:5432/database, or set the PG* variables`])
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ConfigError([`${source}: not a URL; expected postgres://user:password@host:5432/database`])
  }
  if (!['postgres:', 'postgresql:'].includes(parsed.protocol)) {
    throw new ConfigError([`${source}: scheme ${parsed.protocol} is not postgres: or postgresql:`])
  }
  const query = parsed.searchParams
  const description = describe({
    user: decode(parsed.username) || query.get('user') || env.PGUSER,
    host: query.get('host') ?? (decode(parsed.hostname) || env.PGHOST),
    port: parsed.port || query.get('port') || env.PGPORT,
    database: decode(parsed.pathname.slice(1)) || query.get('dbname') || env.PGDATABASE
  })
  // The spellings a password can take in the URL: as written (percent-encoded) and decoded.
  const written = [parsed.password, /[?&]password=([^&#]*)/.exec(url)?.[1]]
  const passwords = [...written, ...written.map((text) => text === undefined ? undefined : decode(text)), query.get('password'), env.PGPASSWORD]
  return { clientConfig: { connectionString: url }, description: `${description} (${source})`, conceal: concealer(passwords) }
}

/** `postgres://user@host:port/database` from those four alone; the user and database are left out when not known. */
function describe ({ user, host, port, database }: { user: string | undefined, host: string | undefined, port: string | undefined, database: string | undefined }): string {
  return `postgres://${user === undefined ? '' : `${user}@`}${host ?? 'localhost'}:${port ?? '5432'}/${database ?? user ?? ''}`
}

function decode (text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** A function that replaces every occurrence of each of `secrets` (the non-empty ones) with `***`. */
export function concealer (secrets: ReadonlyArray<string | null | undefined>): (text: string) => string {
  // Longest first, so that a password that contains another is hidden whole.
  const hidden = [...new Set(secrets.filter((secret): secret is string => typeof secret === 'string' && secret !== ''))].sort((a, b) => b.length - a.length)
  return (text) => hidden.reduce((result, secret) => result.replaceAll(secret, '***'), text)
}
