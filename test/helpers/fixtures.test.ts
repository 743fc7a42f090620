import assert from 'node:assert/strict'
import { test } from 'node:test'
import { requestFixtures } from './fixtures.js'

test('a controller without a fixtures folder gets an error that says what to add, not a bare ENOENT', () => {
  assert.throws(() => requestFixtures('no-such-controller'), {
    message: /^test\/fixtures\/no-such-controller\/ holds no request fixture: every controller needs at least one there \(`npm run new-controller` writes two, `npm run new-fixture` more: see docs\/writing-a-controller\.md\)$/
  })
})
