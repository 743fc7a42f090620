import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { fixture } from '../helpers/fixtures.js'
import { startPostgres } from '../../dev/postgres-process.js'
import { spawnServer, startServer, type ServerProcess } from '../../dev/server-process.js'

/**
 * The database password never reaches a log line, an answer or a metric, whatever form the connection settings
 * take. Each form runs a real server (LOG_LEVEL=trace) against a real PostgreSQL that checks the password: a sync
 * and a finalize while it is up, then the same, /readyz and /metrics while it is down.
 */

const ROLE = 'hooks_app'
// '@', ':' and '/' must be percent-encoded in a URL: both spellings must stay hidden.
const SECRET = `Pw@${randomBytes(6).toString('hex')}:s/cret`
const ENCODED = encodeURIComponent(SECRET)

async function post (server: ServerProcess, hook: 'sync' | 'finalize'): Promise<string> {
  const body = fixture('postgres-writer', hook === 'sync' ? 'sync-create' : 'finalize')
  const response = await fetch(`${server.url}/postgres-writer/${hook}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return `${response.status} ${await response.text()}`
}

async function get (server: ServerProcess, path: string): Promise<string> {
  const response = await fetch(`${server.url}${path}`)
  return `${response.status} ${await response.text()}`
}

test('no form of the connection settings lets the password into the log, an answer or /metrics', async (t) => {
  const postgres = await startPostgres()
  t.after(async () => { await postgres.remove() })
  await postgres.query(`CREATE ROLE ${ROLE} LOGIN SUPERUSER PASSWORD '${SECRET.replaceAll("'", "''")}'`)
  const { port } = new URL(postgres.connectionString)
  const host = '127.0.0.1'
  // The test runner's own DATABASE_URL would win over the other forms.
  const forms: Record<string, Record<string, string | undefined>> = {
    'URL user-info': { DATABASE_URL: `postgres://${ROLE}:${ENCODED}@${host}:${port}/postgres` },
    'URL password= parameter': { DATABASE_URL: `postgresql://${ROLE}@${host}:${port}/postgres?password=${ENCODED}&application_name=x` },
    'URL without password, PGPASSWORD': { DATABASE_URL: `postgres://${ROLE}@${host}:${port}/postgres`, PGPASSWORD: SECRET },
    'PSQL_* variables': { DATABASE_URL: undefined, PSQL_HOST: host, PSQL_PORT: port, PSQL_USER: ROLE, PSQL_DBNAME: 'postgres', PSQL_PASSWORD: SECRET },
    'PG* variables': { DATABASE_URL: undefined, PGHOST: host, PGPORT: port, PGUSER: ROLE, PGDATABASE: 'postgres', PGPASSWORD: SECRET }
  }
  // A server per form, all at once, each in a schema of its own: the calls while the database is up, then while it is down.
  const servers = await Promise.all(Object.entries(forms).map(async ([form, env]) => {
    const schema = `secrets_${randomBytes(4).toString('hex')}`
    const server = await startServer({ env: { LOG_LEVEL: 'trace', PG_SCHEMA: schema, PG_CONNECT_TIMEOUT: '1', PG_STATEMENT_TIMEOUT: '1', ...env } })
    t.after(async () => { await server.stop() })
    return { form, server }
  }))
  const up = await Promise.all(servers.map(async ({ server }) => [await post(server, 'sync'), await post(server, 'finalize')]))
  for (const [index, { form }] of servers.entries()) assert.match(up[index]?.[0] as string, /"reason":"RowWritten"/, `${form}: the password works`)
  await postgres.stop()
  const down = await Promise.all(servers.map(async ({ server }) => [await post(server, 'sync'), await post(server, 'finalize'), await get(server, '/readyz'), await get(server, '/metrics')]))
  await Promise.all(servers.map(async ({ server }) => await server.stop()))
  const problems: string[] = []
  for (const [index, { form, server }] of servers.entries()) {
    assert.match(down[index]?.[0] as string, /"reason":"DatabaseUnavailable"/, form)
    const everything = [...up[index] ?? [], ...down[index] ?? [], server.output()].join('\n')
    for (const spelling of [SECRET, ENCODED]) {
      if (everything.includes(spelling)) problems.push(`${form}: the password is in: ${excerpt(everything, spelling)}`)
    }
    if (!new RegExp(`"database":"postgres://${ROLE}@${host}:${port}/postgres`).test(server.output())) problems.push(`${form}: the start-up line does not say where the database is, as postgres://user@host:port/database`)
  }
  assert.deepEqual(problems, [])
})

test('a libpq key/value DATABASE_URL is refused at start-up, without echoing it', async () => {
  const server = spawnServer({ env: { DATABASE_URL: `host=127.0.0.1 port=5432 user=${ROLE} password=${SECRET} dbname=postgres`, LOG_LEVEL: 'trace' } })
  assert.equal(await server.exited, 1)
  const output = server.output()
  assert.match(output, /DATABASE_URL: a key\/value connection string/)
  assert.ok(!output.includes(SECRET), output)
})

function excerpt (text: string, secret: string): string {
  const at = text.indexOf(secret)
  return text.slice(Math.max(0, at - 150), at + secret.length + 50)
}
