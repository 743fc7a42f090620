import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { CONTRACT_TESTS } from '../../dev/check.js'

/** `npm run check` (dev/check.ts) runs in the copy of new-controller's test; here, what it selects. */

const root = join(import.meta.dirname, '..', '..')

test('npm run check runs every test file that holds each registered controller to a contract of its own', () => {
  // Written in two parts, so that this file does not hold it.
  const perControllerTest = 'test(`$' + '{controller.name}: '
  const perController = readdirSync(join(root, 'test'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => readFileSync(path, 'utf8').includes(perControllerTest))
    .map((path) => relative(root, path))
  assert.deepEqual([...CONTRACT_TESTS].sort(), perController.sort())
})
