import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { configurationPage, environmentExample, README_TABLE_START, withReadmeTable } from '../dev/configuration-docs.js'
import { generatedManifests } from '../dev/manifests.js'
import { monitoringManifests } from '../dev/monitoring/manifests.js'

/**
 * `npm run generate`: every generated file, from the schemas in hooks/: the CRDs and Metacontroller controllers under
 * manifests/, and from the configuration schema docs/configuration.md, .env.example and the README's configuration table;
 * from dev/monitoring/, the alerts and the dashboard of manifests/monitoring/.
 */

const root = join(import.meta.dirname, '..')

async function write (path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true })
  await writeFile(join(root, path), content)
  process.stdout.write(`wrote ${path}\n`)
}

const manifests = generatedManifests(controllers)
for (const folder of ['crds', 'controllers']) {
  for (const entry of await readdir(join(root, 'manifests', folder)).catch(() => [])) {
    if (!manifests.has(`${folder}/${entry}`)) await rm(join(root, 'manifests', folder, entry))
  }
}
for (const [path, content] of manifests) await write(`manifests/${path}`, content)
for (const [path, content] of monitoringManifests()) await write(`manifests/${path}`, content)

await write('docs/configuration.md', configurationPage())
await write('.env.example', environmentExample())
const readme = await readFile(join(root, 'README.md'), 'utf8')
if (readme.includes(README_TABLE_START)) await write('README.md', withReadmeTable(readme))
else process.stdout.write(`README.md has no ${README_TABLE_START} marker: its configuration table was not written\n`)
