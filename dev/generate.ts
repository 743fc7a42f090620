import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Controller } from '../hooks/framework/controller.js'
import type { CommandIo } from './command.js'
import { configurationPage, environmentExample, README_TABLE_START, withReadmeTable } from './configuration-docs.js'
import { generatedManifests } from './manifests.js'
import { monitoringManifests } from './monitoring/manifests.js'

/**
 * `npm run generate`: every generated file, from the schemas in hooks/: the CRDs, Metacontroller controllers and
 * examples under manifests/, and from the configuration schema docs/configuration.md, .env.example and the README's
 * configuration table; from dev/monitoring/, the alerts and the dashboard of manifests/monitoring/. Writes into `root` (the repository) only the files whose content changes, and names them.
 */
export async function generate (controllers: readonly Controller[], root: string, io: CommandIo): Promise<void> {
  const changed: string[] = []
  const write = async (path: string, content: string): Promise<void> => {
    if (await readFile(join(root, path), 'utf8').catch(() => undefined) === content) return
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), content)
    changed.push(`wrote ${path}`)
  }

  const manifests = generatedManifests(controllers)
  for (const folder of ['crds', 'controllers', 'plan']) {
    for (const entry of await readdir(join(root, 'manifests', folder)).catch(() => [])) {
      if (manifests.has(`${folder}/${entry}`)) continue
      await rm(join(root, 'manifests', folder, entry))
      changed.push(`removed manifests/${folder}/${entry}`)
    }
  }
  for (const [path, content] of manifests) await write(`manifests/${path}`, content)
  for (const [path, content] of monitoringManifests()) await write(`manifests/${path}`, content)

  await write('docs/configuration.md', configurationPage())
  await write('.env.example', environmentExample())
  const readme = await readFile(join(root, 'README.md'), 'utf8')
  if (readme.includes(README_TABLE_START)) await write('README.md', withReadmeTable(readme))
  else changed.push(`README.md has no ${README_TABLE_START} marker: its configuration table was not written`)
  io.stdout(changed.length === 0 ? 'every generated file is up to date\n' : `${changed.join('\n')}\n`)
}
