import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { parseAllDocuments, stringify } from 'yaml'
import { controllers } from '../hooks/controllers.js'
import { hookContext, servedHooks, type Controller } from '../hooks/controller.js'
import { kubernetesTime } from '../hooks/wire/conditions.js'
import { groupKey, objectKey } from '../hooks/wire/objects.js'
import type { KubernetesObject, ObjectMap } from '../hooks/wire/schemas.js'
import { metacontrollerManifest } from './manifests.js'

/**
 * npm run -s render -- <cr.yaml> [--observed <children.yaml>]
 * Prints, as YAML, what a composite's sync hook answers for a custom resource: no cluster, no database. (`-s` keeps
 * npm's banner out of the output.)
 */

const usage = 'usage: npm run -s render -- <custom-resource.yaml> [--observed <children.yaml>]'

async function readObjects (path: string): Promise<KubernetesObject[]> {
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => fail(`cannot read ${path}: ${error.code ?? error.message}`))
  const documents = parseAllDocuments(text)
  const objects: KubernetesObject[] = []
  for (const document of Array.isArray(documents) ? documents : [documents]) {
    if (document.errors.length > 0) fail(`${path} is not valid YAML: ${document.errors[0]?.message}`)
    const value = document.toJS() as (KubernetesObject & { items?: KubernetesObject[] }) | null
    if (value === null) continue
    objects.push(...(value.kind === 'List' && Array.isArray(value.items) ? value.items : [value]))
  }
  return objects
}

function fail (message: string): never {
  process.stderr.write(`${message}\n`)
  process.exit(1)
}

let resourcePath: string | undefined
let observedPath: string | undefined
try {
  const { values, positionals } = parseArgs({ options: { observed: { type: 'string' } }, allowPositionals: true })
  if (positionals.length !== 1) fail(usage)
  resourcePath = positionals[0]
  observedPath = values.observed
} catch (error) {
  fail(`${(error as Error).message}\n${usage}`)
}
if (resourcePath === undefined) fail(usage)

const [parent] = await readObjects(resourcePath)
if (parent === undefined) fail(`${resourcePath} holds no object`)
const controller = controllers.find(({ resource }) => parent.apiVersion === resource.apiVersion && parent.kind === resource.kind)
if (controller === undefined) {
  fail(`${parent.apiVersion} ${parent.kind} is not served here; render knows ${controllers.map((c) => `${c.resource.apiVersion} ${c.resource.kind}`).join(', ')}`)
}
if (controller.needs.length > 0) {
  fail(`${parent.kind} needs ${controller.needs.join(' and ')}, so it has no offline answer: run \`npm start\` and curl /${controller.name}/sync with a fixture (see README)`)
}
if (controller.type !== 'composite') {
  fail(`render answers for CompositeControllers, and ${controller.name} is a DecoratorController: run \`npm start\` and curl /${controller.name}/sync with a fixture (see README)`)
}

const namespace = parent.metadata.namespace ?? 'default'
const request = {
  controller: metacontrollerManifest(controller),
  parent: {
    ...parent,
    metadata: { generation: 1, uid: '00000000-0000-0000-0000-000000000000', ...parent.metadata, namespace }
  },
  children: observedChildren(controller, observedPath === undefined ? [] : await readObjects(observedPath), namespace),
  related: {},
  finalizing: false
}
try {
  const answer = await servedHooks(controller).sync(request, hookContext(controller, request.parent, kubernetesTime(new Date()), {}))
  process.stdout.write(stringify(answer, { lineWidth: 0, aliasDuplicateObjects: false }))
} catch (error) {
  fail(`the hook refused ${parent.kind} ${namespace}/${parent.metadata.name}: ${(error as Error).message}`)
}

/**
 * The observed children as Metacontroller groups them; groups without objects may be left out, hooks treat them as
 * empty. An object of a kind the controller does not own is refused: Metacontroller would never send it.
 */
function observedChildren (composite: Extract<Controller, { type: 'composite' }>, objects: KubernetesObject[], parentNamespace: string): ObjectMap {
  const map: ObjectMap = {}
  const strangers: string[] = []
  for (const object of objects) {
    const withNamespace = { ...object, metadata: { ...object.metadata, namespace: object.metadata?.namespace ?? parentNamespace } }
    if (!composite.childResources.some(({ apiVersion, kind }) => apiVersion === object.apiVersion && kind === object.kind)) {
      strangers.push(`${object.apiVersion} ${object.kind} ${objectKey(withNamespace)}`)
      continue
    }
    const group = map[groupKey(object.kind, object.apiVersion)] ??= {}
    group[objectKey(withNamespace)] = withNamespace
  }
  if (strangers.length > 0) {
    const owned = composite.childResources.map(({ apiVersion, kind }) => `${apiVersion} ${kind}`).join(', ')
    fail(`--observed ${observedPath}: ${[strangers.slice(0, -1).join(', '), strangers.at(-1)].filter((part) => part !== '').join(' and ')} ${strangers.length === 1 ? 'is not a child' : 'are not children'} of ${composite.name}, which owns ${owned}; leave ${strangers.length === 1 ? 'it' : 'them'} out`)
  }
  return map
}
