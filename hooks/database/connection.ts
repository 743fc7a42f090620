import type { ClientConfig } from 'pg'

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

/** libpq's other connection-string form, `host=db port=5432 password=…`: a first word followed by `=`. */
const KEY_VALUE = /^\s*[a-z_]+\s*=/

/** The settings a connection is read from, as the configuration schema reads them from the environment. */
export interface ConnectionSettings {
  DATABASE_URL?: string | undefined
  PSQL_HOST?: string | undefined
  PSQL_PORT?: number | undefined
  PSQL_DBNAME?: string | undefined
  PSQL_USER?: string | undefined
  PSQL_PASSWORD?: string | undefined
  PGHOST?: string | undefined
  PGPORT?: string | undefined
  PGDATABASE?: string | undefined
  PGUSER?: string | undefined
  PGPASSWORD?: string | undefined
}

/** What pg takes from libpq's variables for what a URL leaves out. */
type LibpqSettings = Pick<ConnectionSettings, 'PGHOST' | 'PGPORT' | 'PGDATABASE' | 'PGUSER' | 'PGPASSWORD'>

/** A connection setting that cannot be used; the configuration reports it with the other problems. */
export class ConnectionSettingError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ConnectionSettingError'
  }
}

/**
 * The database settings, first match wins: DATABASE_URL; the original operator's PSQL_* variables; libpq's PG*
 * variables. Undefined when none is set.
 */
export function connectionFromSettings (settings: ConnectionSettings): Connection | undefined {
  // pg falls back to PGPASSWORD whenever the settings it is given hold no password.
  const fallbackPassword = settings.PGPASSWORD
  if (settings.DATABASE_URL !== undefined) return connectionFromUrl(settings.DATABASE_URL, 'DATABASE_URL', settings)

  const { PSQL_HOST, PSQL_PORT, PSQL_DBNAME, PSQL_USER, PSQL_PASSWORD } = settings
  if ([PSQL_HOST, PSQL_PORT, PSQL_DBNAME, PSQL_USER, PSQL_PASSWORD].some((value) => value !== undefined)) {
    const [host, port, database, user] = [PSQL_HOST ?? 'localhost', PSQL_PORT ?? 5432, PSQL_DBNAME ?? 'postgres', PSQL_USER ?? 'postgres']
    return {
      clientConfig: { host, port, database, user, password: PSQL_PASSWORD },
      description: `${describe({ user, host, port: String(port), database })} (PSQL_* variables)`,
      conceal: concealer([PSQL_PASSWORD, fallbackPassword])
    }
  }

  const { PGHOST, PGPORT, PGDATABASE, PGUSER } = settings
  if ([PGHOST, PGPORT, PGDATABASE, PGUSER, fallbackPassword].some((value) => value !== undefined)) {
    return {
      clientConfig: {},
      description: `${describe({ user: PGUSER, host: PGHOST, port: PGPORT, database: PGDATABASE ?? PGUSER })} (PG* variables)`,
      conceal: concealer([fallbackPassword])
    }
  }
  return undefined
}

/**
 * The connection for a `postgres://` URL, from `source` (DATABASE_URL, or where else it came from). `libpq` gives what
 * pg falls back to for what the URL leaves out.
 */
export function connectionFromUrl (url: string, source: string, libpq: LibpqSettings = process.env as LibpqSettings): Connection {
  if (KEY_VALUE.test(url)) {
    throw new ConnectionSettingError(`${source}: a key/value connection string (host=… password=…) is not supported; write it as a URL, postgres://user:password@host:5432/database, or set the PG* variables`)
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ConnectionSettingError(`${source}: not a URL; expected postgres://user:password@host:5432/database`)
  }
  if (!['postgres:', 'postgresql:'].includes(parsed.protocol)) {
    throw new ConnectionSettingError(`${source}: scheme ${parsed.protocol} is not postgres: or postgresql:`)
  }
  const query = parsed.searchParams
  const description = describe({
    user: decode(parsed.username) || query.get('user') || libpq.PGUSER,
    host: query.get('host') ?? (decode(parsed.hostname) || libpq.PGHOST),
    port: parsed.port || query.get('port') || libpq.PGPORT,
    database: decode(parsed.pathname.slice(1)) || query.get('dbname') || libpq.PGDATABASE
  })
  // The spellings a password can take in the URL: as written (percent-encoded) and decoded.
  const written = [parsed.password, /[?&]password=([^&#]*)/.exec(url)?.[1]]
  const passwords = [...written, ...written.map((text) => text === undefined ? undefined : decode(text)), query.get('password'), libpq.PGPASSWORD]
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
