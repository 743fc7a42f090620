import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { appendFile, cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { controllers } from '../../hooks/controllers.js'
import { generate } from '../../dev/generate.js'

/** `npm run generate` (dev/generate.ts), in-process, in a folder holding what it writes, as the repository has it. */

const repository = join(import.meta.dirname, '..', '..')

test('generate writes and names only the files whose content changes, and removes the manifests of no controller', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'generate-'))
  t.after(async () => { await rm(root, { recursive: true, force: true }) })
  for (const path of ['manifests', 'docs/configuration.md', '.env.example', 'README.md']) await cp(join(repository, path), join(root, path), { recursive: true })
  const run = async (): Promise<string> => {
    let printed = ''
    await generate(controllers, root, { cwd: root, stdin: async () => '', stdout: (text) => { printed += text } })
    return printed
  }
  assert.equal(await run(), 'every generated file is up to date\n')
  await appendFile(join(root, 'manifests', 'crds', 'podset.yaml'), '# edited by hand\n')
  await writeFile(join(root, 'manifests', 'controllers', 'gone.yaml'), 'kind: CompositeController\n')
  assert.equal(await run(), 'removed manifests/controllers/gone.yaml\nwrote manifests/crds/podset.yaml\n')
  assert.equal(existsSync(join(root, 'manifests', 'controllers', 'gone.yaml')), false)
  assert.equal(await run(), 'every generated file is up to date\n')
})
