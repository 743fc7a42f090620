import { constants } from 'node:buffer'
import { Kind, Type, type Static, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { controllers } from '../controllers.js'
import { flag, integer, port, seconds, text, type VariableGroup, type VariableOptions } from '../framework/settings.js'
import { WEBHOOK_TIMEOUT_SECONDS } from '../framework/wire/webhook.js'

/**
 * The configuration: every environment variable the server reads, each a TypeBox schema of the values it accepts, in
 * groups: the server's own here, and each controller's own, which the registry brings (a controller's `settings`).
 * From them come the types of the server's settings (`Settings`), the check of each value and its message
 * (`readSettings`), and, through `npm run generate`, docs/configuration.md, the README's configuration table and
 * .env.example.
 */

export type Environment = Record<string, string | undefined>

export class ConfigError extends Error {
  constructor (readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`)
    this.name = 'ConfigError'
  }
}

const UNITS: Record<string, number> = { '': 1, K: 1e3, Ki: 1024, M: 1e6, Mi: 1024 ** 2, G: 1e9, Gi: 1024 ** 3 }
const { MAX_STRING_LENGTH } = constants
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

const SERVER = {
  title: 'The server',
  text: 'Where the server listens, what it logs, how much it accepts, and how it stops.',
  variables: {
    PORT: port({
      default: 8080,
      summary: 'port of the hooks',
      details: 'The hooks are served here: over HTTPS when `HOOKS_TLS_CERT` is set, plain HTTP otherwise. `0` lets the system pick a free port. It must differ from `HOOKS_PROBE_PORT`; one that another process holds stops the server at start-up with a line naming it.'
    }),
    HOST: text({
      default: '127.0.0.1',
      summary: 'address both ports listen on',
      details: 'An address of this machine, or `0.0.0.0` for all of them. The default, `127.0.0.1`, keeps both ports to this machine: `npm start` on a laptop serves no one else. The image and the Deployment set `0.0.0.0`, since in a container Metacontroller and the kubelet reach the pod\'s address.'
    }),
    HOOKS_PROBE_PORT: port({
      default: 8081,
      summary: 'plain-HTTP port of `/healthz`, `/readyz` and `/metrics` only',
      details: 'Always plain HTTP and always on, whatever the hook port asks: the kubelet\'s probes and Prometheus reach it without a client certificate when the hooks require one. The hook port serves the same three paths too. It must differ from `PORT` (`0` for both is two ports the system picks).'
    }),
    LOG_LEVEL: Type.Union(LOG_LEVELS.map((level) => Type.Literal(level)), {
      default: 'info',
      summary: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
      details: 'The log is one JSON object per line on stdout (pino). At `info`: start-up and shutdown, a change of the database\'s reachability, and one line per hook call with its controller, hook, parent, generation, outcome, duration and number of children. `debug` adds the development database\'s own lines under `npm start`. No level logs a password or a bearer token.'
    }),
    HOOKS_BODY_LIMIT: integer({
      syntax: 'size',
      minimum: 1024,
      maximum: MAX_STRING_LENGTH,
      default: 16 * 1024 ** 2,
      shownDefault: '16Mi',
      expected: `a size from 1024 bytes to ${MAX_STRING_LENGTH} bytes (512Mi less ${512 * 1024 ** 2 - MAX_STRING_LENGTH} bytes, V8's longest string, which a body is parsed from), such as 16777216 or 16Mi`,
      summary: 'largest request body accepted: bytes, or with `K`, `Ki`, `M`, `Mi`, `G` or `Gi`',
      details: 'Metacontroller sends every observed child in full, so a request grows with its parent: a 2,000-pod PodSet with managedFields is about 11 MB. A larger body is answered 413 with a message naming this variable, and Metacontroller retries it until it is raised. The limit also bounds what the worst body can cost in memory: a body may hold at most one JSON value per 16 bytes of the limit; the bodies held at once, arriving or not yet answered, take at most four times the limit, and bodies are parsed this many bytes at a time while others wait ([Architecture](architecture.md#slow-clients)). It bounds each answer too: a resource whose spec asks for a larger one gets `Ready=False` with reason `AnswerTooLarge` ([Troubleshooting](troubleshooting.md#answertoolarge-an-answer-larger-than-the-hooks-send)). Raise it together with the Deployment\'s memory limit ([Operations](operations.md#memory) sizes one from the other): the server does not start with a limit whose bodies and answers take more than its memory, 16 times the limit against V8\'s heap limit (`--max-old-space-size`) or the container\'s memory limit, whichever is smaller; the line it prints gives the largest limit it can hold.'
    }),
    HOOKS_BODY_TIMEOUT: Type.Number({
      default: 3,
      exclusiveMinimum: 0,
      exclusiveMaximum: WEBHOOK_TIMEOUT_SECONDS,
      expected: `seconds above 0 and below ${WEBHOOK_TIMEOUT_SECONDS} (such as 3 or 1.5)`,
      why: `a body must arrive in time for its answer to reach Metacontroller within the webhook timeout (${WEBHOOK_TIMEOUT_SECONDS}s in the generated controllers)`,
      summary: 'seconds a request body may take to arrive, and an answer to be taken',
      details: 'Counted from when the body may be read to its last byte; fractions are allowed (up to milliseconds). A body still arriving then is answered 408 with `Connection: close`, and what it held is given back. An answer the client has not taken whole this long after it was built has its connection closed. Time the server spent on other work, unable to read or send, is added back (for an answer, up to as much again); but a body still arriving `HOOKS_ADMISSION_TIMEOUT` plus this long after its call arrived, or the webhook timeout after it if that comes first, gets 408 then. Sooner than that, a body or answer that moves under 16 KiB in 0.3 s, or too little to end within this time, gives way when another call waits for the memory it holds. Metacontroller sends a body at once and reads its answer at once: raise it only for a network that cannot carry `HOOKS_BODY_LIMIT` in this time ([Architecture](architecture.md#slow-clients)).'
    }),
    HOOKS_ADMISSION_TIMEOUT: Type.Number({
      default: 8,
      exclusiveMinimum: 0,
      exclusiveMaximum: WEBHOOK_TIMEOUT_SECONDS,
      expected: `seconds above 0 and below ${WEBHOOK_TIMEOUT_SECONDS} (such as 8 or 4.5)`,
      why: `a call must be answered, if only with 503, before Metacontroller gives up on it (webhook timeout ${WEBHOOK_TIMEOUT_SECONDS}s in the generated controllers)`,
      summary: 'seconds after its arrival a hook call may still wait for memory for its body',
      details: 'A call waits when the memory for bodies and answers is held, to receive its body, or when other bodies are being parsed, to parse it; fractions are allowed. A call still waiting this long after its headers arrived is answered 503 with `Retry-After: 1`, and Metacontroller retries it. The default leaves a call at `HOOKS_BODY_LIMIT` 2 s to be received, parsed and answered on a busy server within the webhook timeout; `npm run bench` sends sixteen 2,000-pod PodSet syncs (11 MB) at once and fails on any answer but 200 ([Architecture](architecture.md#slow-clients)).'
    }),
    HOOKS_SHUTDOWN_TIMEOUT: seconds({
      default: 25,
      minimum: 1,
      maximum: 3600,
      summary: 'seconds in-flight hooks get to finish after SIGTERM',
      details: 'On SIGTERM or SIGINT, `/readyz` answers 503 at once, the listener stays open for `HOOKS_SHUTDOWN_DELAY`, the hooks in flight finish, the pool closes, and the process exits 0. If they have not finished within this many seconds, it exits 1. The pod\'s `terminationGracePeriodSeconds` must leave room for it and the `preStop` pause, so that the process ends before the kubelet kills it (the Deployment gives 35 s to 5 and 25).'
    }),
    HOOKS_SHUTDOWN_DELAY: seconds({
      default: 3,
      minimum: 0,
      maximum: 3600,
      summary: 'seconds the server keeps accepting connections after SIGTERM',
      details: 'Until the removal of the pod from the Service\'s endpoints reaches every client, new connections still arrive: for this many seconds the server keeps listening and answering them, while `/readyz` already answers 503. It counts within `HOOKS_SHUTDOWN_TIMEOUT`, so it must be shorter. SIGINT (Ctrl-C at a terminal) skips it.'
    }),
    HOOKS_DATABASE_CHECK_INTERVAL: seconds({
      default: 5,
      minimum: 1,
      maximum: 3600,
      summary: 'seconds before `/readyz` or `/metrics` checks the database again',
      details: '`/readyz` (in its body) and `/metrics` (`metacontroller_hooks_database_up`) say whether PostgreSQL answers a `SELECT 1` through the pool. A check starts when one of them is asked and the last one is older than this; `/readyz` answers at once with the last known state, `/metrics` waits for the check at most half a second. At the readiness probe\'s period of 5 s that is one `SELECT 1` per pod every 5 s. The server also checks once at start-up, and logs each change of state once, with the reason of a failure.'
    }),
  }
} satisfies VariableGroup

const DATABASE = {
  title: 'The database',
  text: 'Only PostgresWriter uses PostgreSQL; the other controllers answer whatever the database does. The connection settings come from the first of three sources that is set: `DATABASE_URL`; the original operator\'s `PSQL_*` variables; libpq\'s `PG*` variables, which pg reads itself (with the others pg knows, such as `PGSSLMODE`). With none set, the server does not start; `npm start` starts a development PostgreSQL instead (see [Operations](operations.md)). No password, in whatever form a setting holds it, appears in a log line, a status, a metric or an error message.',
  variables: {
    DATABASE_URL: Type.Optional(text({
      secret: true,
      example: 'postgres://user:password@host:5432/database',
      summary: '`postgres://user:password@host:5432/db`; read first',
      details: 'A URL, `postgres:` or `postgresql:`, with the query parameters pg understands (such as `?sslmode=require`); libpq\'s key/value form (`host=… password=…`) is refused. When it is set, the `PSQL_*` and `PG*` variables are not used, except that pg takes from `PG*` what the URL leaves out.'
    })),
    PSQL_HOST: Type.Optional(text({
      example: 'localhost',
      summary: 'database host, as the original operator named it (`localhost` when unset); `PSQL_*` are read second',
      details: 'The original operator\'s variables, kept so that its deployments work unchanged. They are used when `DATABASE_URL` is not set and any of them is; each one not set then takes its default: `localhost`, port `5432`, database `postgres`, user `postgres`, no password.'
    })),
    PSQL_PORT: Type.Optional(integer({
      minimum: 1,
      maximum: 65535,
      example: '5432',
      summary: 'its port (`5432` when unset)'
    })),
    PSQL_DBNAME: Type.Optional(text({ example: 'postgres', summary: 'its database (`postgres` when unset)' })),
    PSQL_USER: Type.Optional(text({ example: 'postgres', summary: 'its user (`postgres` when unset)' })),
    PSQL_PASSWORD: Type.Optional(text({ secret: true, summary: 'its password' })),
    PGHOST: Type.Optional(text({
      example: 'localhost',
      summary: 'database host, as libpq names it; `PG*` are read third, by pg itself',
      details: 'libpq\'s variables, which pg reads itself: used when neither `DATABASE_URL` nor any `PSQL_*` variable is set and any of these is.'
    })),
    PGPORT: Type.Optional(text({ example: '5432', summary: 'its port' })),
    PGDATABASE: Type.Optional(text({ example: 'postgres', summary: 'its database' })),
    PGUSER: Type.Optional(text({ example: 'postgres', summary: 'its user' })),
    PGPASSWORD: Type.Optional(text({ secret: true, summary: 'its password' })),
    PG_POOL_MAX: integer({
      default: 10,
      minimum: 1,
      maximum: 1000,
      summary: 'connections in the pool',
      details: 'One pool per process. A PostgresWriter call holds one connection for its whole work; a call that finds none free waits, and the wait counts against `PG_HOOK_DEADLINE`. Metacontroller runs 5 workers per controller by default.'
    }),
    PG_CONNECT_TIMEOUT: seconds({
      default: 2,
      minimum: 1,
      maximum: 60,
      summary: 'seconds for one connection attempt',
      details: 'A database that does not accept the connection within this time makes the call answer `DatabaseUnavailable`, with a retry, instead of hanging.'
    }),
    PG_STATEMENT_TIMEOUT: seconds({
      default: 3,
      minimum: 1,
      maximum: 600,
      summary: 'seconds for one statement, and for one lock wait',
      details: 'Set on each connection as `statement_timeout` and `lock_timeout`, capped at `PG_HOOK_DEADLINE`: no single statement outlives a call, even when the cancel sent at the deadline does not arrive. Behind PgBouncer, which refuses these start-up parameters unless told to ignore them, set them on the hook\'s role instead ([PostgresWriter](postgres-writer.md)).'
    }),
    PG_HOOK_DEADLINE: Type.Number({
      default: 6,
      exclusiveMinimum: 0,
      exclusiveMaximum: WEBHOOK_TIMEOUT_SECONDS,
      expected: `seconds above 0 and below ${WEBHOOK_TIMEOUT_SECONDS} (such as 6 or 4.5)`,
      why: `a PostgresWriter call must answer before Metacontroller gives up on it (webhook timeout ${WEBHOOK_TIMEOUT_SECONDS}s in the generated controllers)`,
      summary: 'seconds one PostgresWriter call may take from its arrival to its answer',
      details: `Counted from the call's arrival: the time its body took to arrive and to be admitted, and waiting for a connection, included; fractions are allowed (up to milliseconds). At the deadline the statement still running is cancelled in PostgreSQL, its transaction rolls back, and the call answers \`DatabaseUnavailable\` with a retry. It must stay below ${WEBHOOK_TIMEOUT_SECONDS}, the webhook timeout the generated controllers give Metacontroller: an answer that comes later is lost, and the call is made again.`
    }),
    PG_PREPARED_STATEMENTS: flag({
      default: true,
      summary: 'send statements as named prepared statements; `false` behind a pooler that drops them',
      details: 'Named prepared statements are parsed and planned by PostgreSQL once per connection, which is most of what the hook\'s statements cost it. Behind PgBouncer in transaction mode they need PgBouncer 1.21 or later with `max_prepared_statements` above 0; with an older one, set `false`. Either way every call answers correctly: a prepared statement that fails is sent again unnamed, and its connection is replaced.'
    }),
  }
} satisfies VariableGroup

const SECURITY = {
  title: 'Security',
  text: 'Optional inbound authentication, as Metacontroller 4.16 and later can send it. `/healthz`, `/readyz` and `/metrics` stay open, on the probe port always (see [Operations](operations.md)).',
  variables: {
    HOOKS_BEARER_TOKEN: Type.Optional(text({
      secret: true,
      summary: 'the token hooks require in `Authorization: Bearer`',
      details: 'Hook calls without `Authorization: Bearer <token>` get 401. Set it, or `HOOKS_BEARER_TOKEN_FILE`, not both. A token is best generated with `openssl rand -hex 32`.'
    })),
    HOOKS_BEARER_TOKEN_FILE: Type.Optional(text({
      example: '/etc/hooks/token/tokens',
      summary: 'a file of accepted tokens, one per line, read again while the server runs',
      details: 'Instead of `HOOKS_BEARER_TOKEN`: a file (a mounted Secret) with one accepted token per line, read at start-up and again every 5 seconds, so that a token is rotated by listing the old and the new one, then the new one alone, with no restart. A file that becomes unreadable or empty leaves the tokens read before, and the log says so. A file that cannot be read at start-up stops the server.'
    })),
    HOOKS_TLS_CERT: Type.Optional(text({
      example: '/etc/hooks/tls/tls.crt',
      summary: 'PEM certificate file: serve the hooks over HTTPS',
      details: 'Set together with `HOOKS_TLS_KEY`. The hook port then speaks HTTPS (TLS 1.2 or later); the probe port stays plain HTTP.'
    })),
    HOOKS_TLS_KEY: Type.Optional(text({
      example: '/etc/hooks/tls/tls.key',
      summary: 'its PEM private key file'
    })),
    HOOKS_TLS_CLIENT_CA: Type.Optional(text({
      example: '/etc/hooks/tls/ca.crt',
      summary: 'PEM file: require client certificates signed by this CA',
      details: 'Mutual TLS: a hook call whose client certificate this CA did not sign is refused during the handshake. It needs `HOOKS_TLS_CERT` and `HOOKS_TLS_KEY`.'
    }))
  }
} satisfies VariableGroup

/** The server's own variables, each typed; a controller's own come with it from the registry (`groups`). */
export const ConfigurationSchema = Type.Object({ ...SERVER.variables, ...DATABASE.variables, ...SECURITY.variables })

/** The server's own settings, each as the type its schema gives it, defaults applied. */
export type Settings = Static<typeof ConfigurationSchema>

/**
 * Every group of variables, in the order the docs give them: the server's, the database's, each controller's own (in
 * the registry's order), then security.
 */
export function groups (): VariableGroup[] {
  return [SERVER, DATABASE, ...controllers.flatMap((controller) => controller.settings === undefined ? [] : [controller.settings.group]), SECURITY]
}

/** Each variable's name and schema, with what it carries for the docs, in the order of `groups`. */
export function variables (): Array<[string, TSchema & VariableOptions]> {
  return groups().flatMap((group) => Object.entries(group.variables) as Array<[string, TSchema & VariableOptions]>)
}

/** What a value of `schema` must be, as messages and the docs say it. */
export function expectedValue (schema: TSchema & VariableOptions): string {
  if (schema.expected !== undefined) return schema.expected
  switch (schema[Kind]) {
    case 'Integer': return `a whole number from ${String(schema.minimum)} to ${String(schema.maximum)}`
    case 'Boolean': return 'true or false'
    case 'Union': return `one of ${(schema.anyOf as Array<{ const: string }>).map((literal) => literal.const).join(', ')}`
    case 'Array': return `a comma-separated list of ${expectedValue(schema.items as TSchema & VariableOptions)}s`
    default: return 'a text'
  }
}

/** The value of a variable's text, as its schema reads it; undefined when it cannot be read as that type at all. */
function parse (schema: TSchema & VariableOptions, text: string): unknown {
  if (schema.syntax === 'size') {
    const match = /^(\d+)(K|Ki|M|Mi|G|Gi)?B?$/.exec(text)
    return match === null ? undefined : Number(match[1]) * (UNITS[match[2] ?? ''] ?? NaN)
  }
  switch (schema[Kind]) {
    case 'Integer': return /^[+-]?\d+$/.test(text) ? Number(text) : undefined
    case 'Number': return /^\d+(\.\d{1,3})?$/.test(text) ? Number(text) : undefined
    case 'Boolean': {
      const word = text.toLowerCase()
      return ['true', '1', 'yes'].includes(word) ? true : ['false', '0', 'no'].includes(word) ? false : undefined
    }
    case 'Array': return text.split(',').map((item) => item.trim()).filter((item) => item !== '')
    default: return text
  }
}

/**
 * The settings `env` gives, each checked against its schema; a variable not set (or blank) takes its default. Every
 * problem is collected, naming the variable and what it accepts; the value of a variable with a problem is its
 * default.
 */
export function readSettings (env: Environment): { settings: Settings & Readonly<Record<string, unknown>>, problems: string[] } {
  const settings: Record<string, unknown> = {}
  const problems: string[] = []
  for (const [name, schema] of variables()) {
    const text = env[name]?.trim()
    if (text === undefined || text === '') {
      settings[name] = schema.default
      continue
    }
    const value = parse(schema, text)
    if (schema[Kind] === 'Array' && Array.isArray(value)) {
      const items = schema.items as TSchema & VariableOptions
      const bad = value.filter((item) => !Value.Check(items, item))
      problems.push(...bad.map((item) => `${name}: ${JSON.stringify(item)} is not ${expectedValue(items)}`))
      settings[name] = bad.length === 0 ? value : schema.default
    } else if (value !== undefined && Value.Check(schema, value)) {
      settings[name] = value
    } else {
      problems.push(`${name}='${schema.secret === true ? '***' : text}': expected ${expectedValue(schema)}${schema.why === undefined ? '' : `: ${schema.why}`}`)
      settings[name] = schema.default
    }
  }
  return { settings: settings as Settings & Readonly<Record<string, unknown>>, problems }
}
