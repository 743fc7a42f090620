import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError } from '../../hooks/config.js'
import { connectionFromEnvironment } from '../../hooks/database/connection.js'

test('DATABASE_URL wins, and its password never reaches the description', () => {
  const connection = connectionFromEnvironment({ DATABASE_URL: 'postgres://app:hunter2@db:5432/hooks', PSQL_HOST: 'other', PGHOST: 'third' })
  assert.deepEqual(connection?.clientConfig, { connectionString: 'postgres://app:hunter2@db:5432/hooks' })
  assert.equal(connection?.description, 'postgres://app:***@db:5432/hooks (DATABASE_URL)')
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
