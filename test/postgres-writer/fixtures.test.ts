import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { build, emptyDatabase } from '../helpers/app.js'
import { fixture, fixtureNames } from '../helpers/fixtures.js'
import { assertGolden } from '../helpers/golden.js'

/** The order the fixtures apply in, as the fixtures folder's README lists it: `1. \`<case>.json\``. */
function documentedOrder (): string[] {
  const readme = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'postgres-writer', 'README.md'), 'utf8')
  return [...readme.matchAll(/^\d+\. `([a-z0-9-]+)\.json`/gm)].map((match) => match[1] ?? '')
}

test('the fixtures, sent in the documented order to an empty database, get their expected answers', async (t) => {
  const order = documentedOrder()
  assert.deepEqual([...order].sort(), fixtureNames('postgres-writer'), 'the README of test/fixtures/postgres-writer lists every fixture once')

  // A database of its own, as on a first `npm start`: the answers then name the schema `public`, as users see them.
  const { app } = await build(t, { databaseUrl: await emptyDatabase(t, 'fixtures'), env: { PG_SCHEMA: 'public' } })

  for (const name of order) {
    const request = fixture('postgres-writer', name)
    const response = await app.inject({ method: 'POST', url: `/postgres-writer/${request.finalizing === true ? 'finalize' : 'sync'}`, payload: request })
    assert.equal(response.statusCode, 200, `${name}: ${response.body}`)
    assertGolden(response.json(), 'postgres-writer', name)
  }
})
