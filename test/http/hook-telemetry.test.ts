import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { fixturePath } from '../helpers/fixtures.js'
import { startServer } from '../helpers/server-process.js'

/** hooks/http/hook-telemetry.ts: the log line of each hook call, as a real server process writes it. */

test('the log line of a not_ready answer carries the Ready condition\'s reason and message', async (t) => {
  const server = await startServer({ env: { DATABASE_URL: 'postgres://hooks:pw-Lq7-never-log@127.0.0.1:1/hooks', PG_CONNECT_TIMEOUT: '1' } })
  t.after(async () => { await server.stop() })
  for (const [controller, name] of [['postgres-writer', 'sync-create'], ['podset', 'first-sync']]) {
    const response = await fetch(`${server.url}/${controller}/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await readFile(fixturePath(controller as string, name as string)) })
    assert.equal(response.status, 200)
    await server.logged(`"${controller} sync not_ready"`, 10_000)
  }
  const lines = server.output().split('\n').filter((line) => line.includes('sync not_ready')).map((line) => JSON.parse(line) as Record<string, unknown>)
  assert.deepEqual(lines.map(({ controller, outcome, reason }) => ({ controller, outcome, reason })), [
    { controller: 'postgres-writer', outcome: 'not_ready', reason: 'DatabaseUnavailable' },
    { controller: 'podset', outcome: 'not_ready', reason: 'PodsUnavailable' }
  ])
  assert.match(String(lines[0]?.message), /ECONNREFUSED|connect/, 'what the database said')
  assert.doesNotMatch(server.output(), /pw-Lq7-never-log/)
})
