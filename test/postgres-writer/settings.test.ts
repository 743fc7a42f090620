import assert from 'node:assert/strict'
import { test } from 'node:test'
import { postgresWriter } from '../../hooks/postgres-writer/index.js'
import { postgresWriterSettings } from '../../hooks/postgres-writer/settings.js'
import { groups } from '../../hooks/runtime/config-schema.js'
import { ConfigError, loadConfig, type Environment } from '../../hooks/runtime/config.js'

const read = (env: Environment): ReturnType<typeof postgresWriterSettings.read> => postgresWriterSettings.read(loadConfig(env).settings)

test('PostgresWriter\'s own settings are read with the server\'s: the schema, the allowlist as a set, auto-create', () => {
  assert.deepEqual(read({}), { schema: 'public', autoCreateTables: true, tableAllowlist: undefined })
  assert.deepEqual(read({ PG_SCHEMA: 'school', PG_TABLE_ALLOWLIST: ' students, graduates ,', PG_AUTO_CREATE_TABLES: 'false' }),
    { schema: 'school', autoCreateTables: false, tableAllowlist: new Set(['students', 'graduates']) })
})

test('a bad value of PostgresWriter\'s settings is reported with the server\'s problems, naming the variable', () => {
  assert.throws(() => loadConfig({ PORT: 'eighty', PG_SCHEMA: 'Public', PG_TABLE_ALLOWLIST: 'ok,"bad"' }), (error: unknown) => {
    assert.ok(error instanceof ConfigError)
    assert.deepEqual(error.problems, [
      "PORT='eighty': expected a whole number from 0 to 65535",
      "PG_SCHEMA='Public': expected a lowercase SQL identifier (letters, digits, _; at most 63)",
      'PG_TABLE_ALLOWLIST: "\\"bad\\"" is not a lowercase SQL identifier'
    ])
    return true
  })
})

test('the configuration documents PostgresWriter\'s settings as its own group, from the registry, between the database and security', () => {
  const titles = groups().map((group) => group.title)
  assert.deepEqual(titles, ['The server', 'The database', 'PostgresWriter', 'Security'])
  assert.equal(postgresWriter.settings, postgresWriterSettings)
  assert.deepEqual(Object.keys(postgresWriterSettings.group.variables), ['PG_SCHEMA', 'PG_AUTO_CREATE_TABLES', 'PG_TABLE_ALLOWLIST'])
})
