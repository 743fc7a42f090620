import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

/** docs/architecture.md walks the layout file by file: every file of hooks/, dev/ and scripts/ is named there. */

const root = join(import.meta.dirname, '..')

test('docs/architecture.md names every file of hooks/, dev/ and scripts/, by its path', () => {
  const page = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8')
  const files = ['hooks', 'dev', 'scripts'].flatMap((folder) => readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1)))
  assert.ok(files.length > 80, `${files.length} files`)
  assert.deepEqual(files.filter((file) => !page.includes(`\`${file}\``)).sort(), [], 'not named in docs/architecture.md')
})
