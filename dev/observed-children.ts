import { parseAllDocuments } from 'yaml'
import type { Controller } from '../hooks/framework/controller.js'
import { groupKey, objectKey } from '../hooks/framework/wire/objects.js'
import type { KubernetesObject, ObjectMap } from '../hooks/framework/wire/schemas.js'
import { CommandError, readInput, type CommandIo } from './command.js'

/** Objects from files, as `render` and `new-fixture` take them: a custom resource, and observed children. */

/**
 * The objects of a YAML or JSON file (`-`: standard input): several documents, or a List such as
 * `kubectl get -o yaml` prints. Throws a one-line CommandError naming the file.
 */
export async function readObjects (io: CommandIo, path: string): Promise<KubernetesObject[]> {
  const source = await readInput(io, path)
  const objects: KubernetesObject[] = []
  for (const document of parseAllDocuments(source)) {
    if (document.errors.length > 0) throw new CommandError(`${path} is not valid YAML: ${document.errors[0]?.message.split('\n')[0]}`)
    const value = document.toJS() as (KubernetesObject & { items?: KubernetesObject[] }) | null
    if (value === null) continue
    objects.push(...(value.kind === 'List' && Array.isArray(value.items) ? value.items : [value]))
  }
  for (const object of objects) {
    if (typeof object !== 'object' || object === null || typeof object.kind !== 'string' || typeof object.apiVersion !== 'string' || typeof object.metadata?.name !== 'string') {
      throw new CommandError(`${path} holds something that is not a Kubernetes object (with apiVersion, kind and metadata.name): ${JSON.stringify(object).slice(0, 100)}`)
    }
  }
  return objects
}

function listed (names: string[]): string {
  return [names.slice(0, -1).join(', '), names.at(-1)].filter((part) => part !== undefined && part !== '').join(' and ')
}

/**
 * The observed children of `parent` as Metacontroller groups them in a sync request, from the objects of `path`. Each
 * child gets the parent's namespace where it names none. An object Metacontroller would not send is refused, each
 * named (a CommandError): one of a kind the controller does not own, and, for a parent that has a uid (one read from a cluster), one
 * its generated selector (`controller-uid=<uid>`) does not select.
 */
export function observedChildren (controller: Extract<Controller, { type: 'composite' }>, parent: KubernetesObject, objects: KubernetesObject[], path: string): ObjectMap {
  const namespace = parent.metadata.namespace ?? 'default'
  const uid = parent.metadata.uid
  const map: ObjectMap = {}
  const strangers: string[] = []
  const unselected: string[] = []
  for (const object of objects) {
    const child = { ...object, metadata: { ...object.metadata, namespace: object.metadata.namespace ?? namespace } }
    const name = `${object.apiVersion} ${object.kind} ${objectKey(child)}`
    if (!controller.childResources.some(({ apiVersion, kind }) => apiVersion === object.apiVersion && kind === object.kind)) {
      strangers.push(name)
    } else if (uid !== undefined && child.metadata.labels?.['controller-uid'] !== uid) {
      unselected.push(name)
    } else {
      const group = map[groupKey(object.kind, object.apiVersion)] ??= {}
      group[objectKey(child)] = child
    }
  }
  if (strangers.length > 0) {
    const owned = controller.childResources.map(({ apiVersion, kind }) => `${apiVersion} ${kind}`).join(', ')
    throw new CommandError(`--observed ${path}: ${listed(strangers)} ${strangers.length === 1 ? 'is not a child' : 'are not children'} of ${controller.name}, which owns ${owned}; leave ${strangers.length === 1 ? 'it' : 'them'} out`)
  }
  if (unselected.length > 0) {
    throw new CommandError(`--observed ${path}: ${listed(unselected)} ${unselected.length === 1 ? 'lacks' : 'lack'} the label controller-uid=${uid} by which Metacontroller selects the children of ${parent.kind} ${namespace}/${String(parent.metadata.name)}; list only those: kubectl get <kinds> -n ${namespace} -l controller-uid=${uid} -o yaml`)
  }
  return map
}
