import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { controllers } from '../hooks/controllers.js'

/**
 * docs/architecture.md walks the layout file by file: every file of hooks/, dev/ and scripts/ is named there, but for
 * the folder of a controller of your own (`npm run new-controller`), which the page describes by its layout alone.
 */

const root = join(import.meta.dirname, '..')
const page = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8')

/** The registered controllers whose folder the page does not walk: their files are their author's, not the project's. */
const ownControllers = controllers.filter((controller) => !page.includes(`\`hooks/${controller.name}/`))

test('docs/architecture.md names every file of hooks/, dev/ and scripts/, by its path, but in a controller of your own', () => {
  const files = ['hooks', 'dev', 'scripts'].flatMap((folder) => readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1)))
  assert.ok(files.length > 80, `${files.length} files`)
  const own = ownControllers.map((controller) => join('hooks', controller.name) + '/')
  assert.deepEqual(files.filter((file) => !own.some((folder) => file.startsWith(folder)) && !page.includes(`\`${file}\``)).sort(), [], 'not named in docs/architecture.md')
})

test('a controller of your own keeps the layout docs/architecture.md gives every controller folder', () => {
  assert.match(page, /Each controller has an `index.ts` that declares it .*, a\n?\s*`resource.ts` with its custom resource .*, and a pure `sync.ts`/s)
  for (const controller of ownControllers) {
    const missing = ['index.ts', 'resource.ts', 'sync.ts'].filter((file) => !existsSync(join(root, 'hooks', controller.name, file)))
    assert.deepEqual(missing, [], `hooks/${controller.name}/ lacks what every controller folder holds`)
  }
})
