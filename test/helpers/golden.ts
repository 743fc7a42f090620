import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', 'fixtures')

/**
 * Compares a hook answer with test/fixtures/<controller>/<name>.expected.json. With UPDATE_GOLDEN=1 the file is
 * rewritten instead: review the diff before committing it.
 */
export function assertGolden (actual: unknown, controller: string, name: string): void {
  const path = join(root, controller, `${name}.expected.json`)
  const rendered = `${JSON.stringify(actual, null, 2)}\n`
  if (process.env.UPDATE_GOLDEN === '1') {
    writeFileSync(path, rendered)
    return
  }
  let expected: string
  try {
    expected = readFileSync(path, 'utf8')
  } catch {
    assert.fail(`${path} is missing: run UPDATE_GOLDEN=1 npm test -- <test file> to write it, then review it`)
  }
  assert.deepEqual(JSON.parse(rendered), JSON.parse(expected), `answer differs from ${path}`)
}
