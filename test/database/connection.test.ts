import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig, type Environment } from '../../hooks/runtime/config.js'
import type { Connection } from '../../hooks/database/connection.js'

/** The connection the server would use with this environment. */
const connectionFromEnvironment = (env: Environment): Connection | undefined => loadConfig(env).database.connection

test('DATABASE_URL wins; the description holds its user, host, port and database alone', () => {
  const connection = connectionFromEnvironment({ DATABASE_URL: 'postgres://app:hunter2@db:5432/hooks', PSQL_HOST: 'other', PGHOST: 'third' })
  assert.deepEqual(connection?.clientConfig, { connectionString: 'postgres://app:hunter2@db:5432/hooks' })
  assert.equal(connection?.description, 'postgres://app@db:5432/hooks (DATABASE_URL)')
  const query = connectionFromEnvironment({ DATABASE_URL: 'postgresql://app@db/hooks?password=p%40ss&sslmode=require' })
  assert.equal(query?.description, 'postgres://app@db:5432/hooks (DATABASE_URL)')
})

test('every password a setting holds is concealed in any text, in each of its spellings', () => {
  const url = connectionFromEnvironment({ DATABASE_URL: 'postgres://app:s%2Fcret@db/hooks?password=p%40ss', PGPASSWORD: 'fallback' })
  assert.equal(url?.conceal('a s/cret, s%2Fcret, p@ss, p%40ss and fallback'), 'a ***, ***, ***, *** and ***')
  const psql = connectionFromEnvironment({ PSQL_HOST: 'db', PSQL_PASSWORD: 'hunter2' })
  assert.equal(psql?.conceal('password hunter2 and hunter22'), 'password *** and ***2')
  const libpq = connectionFromEnvironment({ PGHOST: 'db', PGPASSWORD: 'secret' })
  assert.equal(libpq?.conceal('secret'), '***')
  assert.equal(connectionFromEnvironment({ PGHOST: 'db' })?.conceal('nothing to hide'), 'nothing to hide')
  // A password that is not valid percent-encoding is hidden as written.
  assert.equal(connectionFromEnvironment({ DATABASE_URL: 'postgres://app:100%zz@db/hooks' })?.conceal('was 100%zz'), 'was ***')
})

test('a libpq key/value string in DATABASE_URL is refused without echoing it', () => {
  assert.throws(() => connectionFromEnvironment({ DATABASE_URL: 'host=db password=hunter2' }), (error: Error) => {
    assert.match(error.message, /DATABASE_URL: a key\/value connection string \(host=… password=…\) is not supported; write it as a URL/)
    assert.doesNotMatch(error.message, /hunter2/)
    return true
  })
})

test('the original operator\'s PSQL_* variables come next', () => {
  const connection = connectionFromEnvironment({ PSQL_HOST: 'db', PSQL_PORT: '5433', PSQL_DBNAME: 'school', PSQL_USER: 'yash', PSQL_PASSWORD: 'password', PGHOST: 'ignored' })
  assert.deepEqual(connection?.clientConfig, { host: 'db', port: 5433, database: 'school', user: 'yash', password: 'password' })
  assert.doesNotMatch(connection?.description ?? '', /password/)
  assert.throws(() => connectionFromEnvironment({ PSQL_HOST: 'db', PSQL_PORT: 'abc' }), ConfigError)
})

test('libpq\'s PG* variables are left for pg to read; nothing set means no database', () => {
  const connection = connectionFromEnvironment({ PGHOST: 'db', PGUSER: 'app', PGPASSWORD: 'secret' })
  assert.deepEqual(connection?.clientConfig, {})
  assert.equal(connection?.description, 'postgres://app@db:5432/app (PG* variables)')
  assert.equal(connectionFromEnvironment({}), undefined)
  assert.throws(() => connectionFromEnvironment({ DATABASE_URL: 'not a url' }), /DATABASE_URL/)
  assert.throws(() => connectionFromEnvironment({ DATABASE_URL: 'mysql://x@y/z' }), /mysql/)
})
