import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../../hooks/runtime/config.js'

test('defaults', () => {
  const config = loadConfig({})
  assert.equal(config.port, 8080)
  assert.equal(config.probePort, 8081)
  assert.equal(config.databaseCheckIntervalMs, 5000)
  assert.equal(config.host, '127.0.0.1')
  assert.equal(config.bodyLimit, 16 * 1024 * 1024)
  assert.equal(config.shutdownTimeoutMs, 25_000)
  assert.equal(config.bearerTokens, undefined)
  assert.equal(config.tls, undefined)
})

test('sizes and booleans are parsed', () => {
  const config = loadConfig({ HOOKS_BODY_LIMIT: '128Mi', PG_PREPARED_STATEMENTS: 'false' }, { bytes: 4 * 1024 ** 3, what: 'V8\'s heap limit (--max-old-space-size)' })
  assert.equal(config.bodyLimit, 128 * 1024 * 1024)
  assert.equal(config.database.preparedStatements, false)
  assert.equal(loadConfig({}).database.preparedStatements, true)
})

test('HOOKS_BODY_LIMIT: refused at start-up, in one line saying what to set, where the server could not parse or hold a body', () => {
  // Longer than V8's longest string, which a body is parsed from: the value cannot be used anywhere.
  for (const raw of ['9999999999Gi', '513Mi']) {
    assert.throws(() => loadConfig({ HOOKS_BODY_LIMIT: raw }), (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.deepEqual(error.problems, [`HOOKS_BODY_LIMIT='${raw}': expected a size from 1024 bytes to 536870888 bytes (512Mi less 24 bytes, V8's longest string, which a body is parsed from), such as 16777216 or 16Mi`])
      return true
    }, raw)
  }
  // More than the memory holds: the Deployment's heap (--max-old-space-size=256 and --max-semi-space-size=16 give V8 a
  // heap limit of 304 MiB).
  const deployment = { bytes: 304 * 1024 ** 2, what: 'V8\'s heap limit (--max-old-space-size)' }
  assert.equal(loadConfig({ HOOKS_BODY_LIMIT: '19Mi' }, deployment).bodyLimit, 19 * 1024 ** 2)
  assert.throws(() => loadConfig({ HOOKS_BODY_LIMIT: '20Mi' }, deployment), (error: unknown) => {
    assert.ok(error instanceof ConfigError)
    assert.deepEqual(error.problems, ['HOOKS_BODY_LIMIT=20971520 bytes is more than this server can hold: bodies and answers at that limit take up to 16 times it, 320 MiB, and V8\'s heap limit (--max-old-space-size) is 304 MiB: set HOOKS_BODY_LIMIT to at most 19Mi, or raise the memory limit and --max-old-space-size with it (docs/operations.md, Memory)'])
    return true
  })
  // A container's memory limit below the heap's counts instead.
  assert.throws(() => loadConfig({ HOOKS_BODY_LIMIT: '64Mi' }, { bytes: 768 * 1024 ** 2, what: 'the container\'s memory limit' }), /HOOKS_BODY_LIMIT=67108864 bytes is more than this server can hold: .* and the container's memory limit is 768 MiB: set HOOKS_BODY_LIMIT to at most 48Mi/)
})

test('every bad value is reported at once, naming the variable', () => {
  assert.throws(() => loadConfig({
    PORT: '99999',
    HOOKS_PROBE_PORT: 'metrics',
    HOOKS_DATABASE_CHECK_INTERVAL: '0',
    LOG_LEVEL: 'loud',
    PG_SCHEMA: 'Public; drop',
    PG_TABLE_ALLOWLIST: 'ok,"bad"',
    PG_AUTO_CREATE_TABLES: 'maybe',
    HOOKS_TLS_CERT: '/tmp/cert.pem',
    HOOKS_TLS_CLIENT_CA: '/tmp/ca.pem'
  }), (error: unknown) => {
    assert.ok(error instanceof ConfigError)
    assert.equal(error.problems.length, 8)
    for (const name of ['PORT', 'HOOKS_PROBE_PORT', 'HOOKS_DATABASE_CHECK_INTERVAL', 'LOG_LEVEL', 'PG_SCHEMA', 'PG_TABLE_ALLOWLIST', 'PG_AUTO_CREATE_TABLES', 'HOOKS_TLS_CERT and HOOKS_TLS_KEY']) {
      assert.match(error.message, new RegExp(name))
    }
    return true
  })
})

test('PG_HOOK_DEADLINE: seconds, 6 by default, and below the webhook timeout of the generated controllers', () => {
  assert.equal(loadConfig({}).database.hookDeadlineMs, 6000)
  assert.equal(loadConfig({ PG_HOOK_DEADLINE: '4.5' }).database.hookDeadlineMs, 4500)
  for (const raw of ['10', '12', '0', '-1', 'soon', '1e3']) {
    assert.throws(() => loadConfig({ PG_HOOK_DEADLINE: raw }), (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.deepEqual(error.problems, [`PG_HOOK_DEADLINE='${raw}': expected seconds above 0 and below 10 (such as 6 or 4.5): a PostgresWriter call must answer before Metacontroller gives up on it (webhook timeout 10s in the generated controllers)`])
      return true
    }, raw)
  }
})

test('the probe port must differ from the hook port', () => {
  assert.throws(() => loadConfig({ PORT: '9000', HOOKS_PROBE_PORT: '9000' }), /HOOKS_PROBE_PORT=9000 is PORT too/)
  assert.equal(loadConfig({ PORT: '0', HOOKS_PROBE_PORT: '0' }).probePort, 0, 'two ports the system picks are two ports')
})

test('the database settings are checked with the rest, and reported together with them', () => {
  assert.throws(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://app@db/hooks' }), (error: unknown) => {
    assert.ok(error instanceof ConfigError)
    assert.deepEqual(error.problems, ["PORT='eighty': expected a whole number from 0 to 65535", 'DATABASE_URL: scheme mysql: is not postgres: or postgresql:'])
    return true
  })
  assert.throws(() => loadConfig({ PSQL_HOST: 'db', PSQL_PORT: 'abc', LOG_LEVEL: 'loud' }), (error: unknown) => {
    assert.ok(error instanceof ConfigError)
    assert.deepEqual(error.problems, ["LOG_LEVEL='loud': expected one of fatal, error, warn, info, debug, trace, silent", "PSQL_PORT='abc': expected a whole number from 1 to 65535"])
    return true
  })
  assert.equal(loadConfig({ PSQL_HOST: 'db', PSQL_PORT: ' 5433 ' }).database.connection?.description, 'postgres://postgres@db:5433/postgres (PSQL_* variables)')
})

test('HOOKS_BODY_TIMEOUT and HOOKS_ADMISSION_TIMEOUT: seconds, 3 and 8 by default, below the webhook timeout', () => {
  const defaults = loadConfig({})
  assert.deepEqual([defaults.bodyTimeoutMs, defaults.admissionTimeoutMs], [3000, 8000])
  const set = loadConfig({ HOOKS_BODY_TIMEOUT: '1.5', HOOKS_ADMISSION_TIMEOUT: '0.25' })
  assert.deepEqual([set.bodyTimeoutMs, set.admissionTimeoutMs], [1500, 250])
  assert.throws(() => loadConfig({ HOOKS_BODY_TIMEOUT: '10', HOOKS_ADMISSION_TIMEOUT: 'soon' }), (error: unknown) => {
    assert.ok(error instanceof ConfigError)
    assert.deepEqual(error.problems, [
      "HOOKS_BODY_TIMEOUT='10': expected seconds above 0 and below 10 (such as 3 or 1.5): a body must arrive in time for its answer to reach Metacontroller within the webhook timeout (10s in the generated controllers)",
      "HOOKS_ADMISSION_TIMEOUT='soon': expected seconds above 0 and below 10 (such as 8 or 4.5): a call must be answered, if only with 503, before Metacontroller gives up on it (webhook timeout 10s in the generated controllers)"
    ])
    return true
  })
})
