import { readFile } from 'node:fs/promises'
import { parseAllDocuments, stringify } from 'yaml'
import { controllers } from '../hooks/controllers.js'
import { hookContext, type Controller } from '../hooks/controller.js'
import { kubernetesTime } from '../hooks/wire/conditions.js'
import { groupKey, objectKey } from '../hooks/wire/objects.js'
import type { KubernetesObject, ObjectMap } from '../hooks/wire/schemas.js'
import { metacontrollerManifest } from './manifests.js'

/**
 * npm run render -- <cr.yaml> [--observed <children.yaml>]
 * Prints, as YAML, what a composite's sync hook answers for a custom resource: no cluster, no database.
 */

const usage = 'usage: npm run render -- <custom-resource.yaml> [--observed <children.yaml>]'

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

const args = process.argv.slice(2)
const observedAt = args.indexOf('--observed')
const observedPath = observedAt === -1 ? undefined : args[observedAt + 1]
const resourcePath = args.find((arg, index) => !arg.startsWith('--') && (observedAt === -1 || index !== observedAt + 1))
if (resourcePath === undefined || (observedAt !== -1 && observedPath === undefined)) fail(usage)

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
  const answer = await controller.hooks.sync(request, hookContext(controller, request.parent, kubernetesTime(new Date()), {}))
  process.stdout.write(stringify(answer, { lineWidth: 0, aliasDuplicateObjects: false }))
} catch (error) {
  fail(`the hook refused ${parent.kind} ${namespace}/${parent.metadata.name}: ${(error as Error).message}`)
}

/** The observed children as Metacontroller groups them; groups without objects may be left out, hooks treat them as empty. */
function observedChildren (composite: Extract<Controller, { type: 'composite' }>, objects: KubernetesObject[], parentNamespace: string): ObjectMap {
  const map: ObjectMap = {}
  for (const object of objects) {
    if (!composite.childResources.some(({ apiVersion }) => apiVersion === object.apiVersion)) {
      fail(`--observed: ${object.apiVersion} ${object.kind} is not a child kind of ${composite.name}`)
    }
    const withNamespace = { ...object, metadata: { ...object.metadata, namespace: object.metadata.namespace ?? parentNamespace } }
    const group = map[groupKey(object.kind, object.apiVersion)] ??= {}
    group[objectKey(withNamespace)] = withNamespace
  }
  return map
}
