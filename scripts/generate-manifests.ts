import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { generatedManifests } from './manifests.js'

const root = join(import.meta.dirname, '..', 'manifests')
const files = generatedManifests(controllers)
for (const folder of ['crds', 'controllers']) {
  for (const entry of await readdir(join(root, folder)).catch(() => [])) {
    if (!files.has(`${folder}/${entry}`)) await rm(join(root, folder, entry))
  }
}
for (const [path, content] of files) {
  await mkdir(dirname(join(root, path)), { recursive: true })
  await writeFile(join(root, path), content)
  process.stdout.write(`wrote manifests/${path}\n`)
}
