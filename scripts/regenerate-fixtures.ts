import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { CompositeRequest, KubernetesObject } from '../hooks/framework/wire/schemas.js'
import { appliedChild } from '../dev/api-server/apply.js'
import { sortedKeys } from '../dev/api-server/encoding.js'
import { LAST_APPLIED } from '../dev/api-server/metacontroller.js'
import { commandArguments } from '../dev/command.js'

/**
 * `npm run fixtures`: rewrites every observed child in test/fixtures/<controller>/*.json with the API-server
 * simulation (dev/api-server), from what the child itself records: the desired object Metacontroller
 * applied (its last-applied annotation, minus the controller-uid label), its uid, resourceVersion, times, ready
 * counts, phase and deletion. Run it after changing the simulation, review the diff, and check that `npm test`
 * passes without UPDATE_GOLDEN: a hook must not answer differently to what it does not read.
 */

commandArguments({
  usage: `usage: npm run fixtures
  Rewrites every observed child in test/fixtures/<controller>/*.json with the API-server simulation (dev/api-server),
  from what the child itself records. Review the diff, then check that npm test passes without UPDATE_GOLDEN.`,
  options: {}
})

type Json = Record<string, any>

const root = join(import.meta.dirname, '..', 'test', 'fixtures')

/** `value` with its object keys in the order `like` has them (others after): the hook's order, lost in the annotation. */
function orderedLike (value: unknown, like: unknown): unknown {
  if (Array.isArray(value)) return value.map((item, i) => orderedLike(item, Array.isArray(like) ? like[i] : undefined))
  if (typeof value !== 'object' || value === null) return value
  const order = typeof like === 'object' && like !== null && !Array.isArray(like) ? Object.keys(like) : []
  const rank = (key: string): number => order.includes(key) ? order.indexOf(key) : order.length
  return Object.fromEntries(Object.keys(value).sort((a, b) => rank(a) - rank(b)).map((key) => [key, orderedLike((value as Json)[key], (like as Json | undefined)?.[key])]))
}

function regenerated (parent: KubernetesObject, child: Json): KubernetesObject {
  const applied = JSON.parse(child.metadata.annotations[LAST_APPLIED])
  delete applied.metadata.labels['controller-uid']
  const desired = orderedLike(applied, child) as KubernetesObject
  // The last write of a controller or of the kubelet dates the status; an untouched child has only Metacontroller's.
  const writes: Json[] = child.metadata.managedFields
  const lastWrite = writes.find((write) => write.manager !== 'metacontroller' && write.manager !== 'kubelet') ?? writes[0]
  const again = appliedChild(parent, desired, child as KubernetesObject, {
    time: lastWrite?.time,
    resourceVersion: child.metadata.resourceVersion,
    deletionTimestamp: child.metadata.deletionTimestamp,
    readyReplicas: child.status?.readyReplicas ?? 0,
    updatedReplicas: child.status?.updatedReplicas ?? 0,
    observedGeneration: child.status?.observedGeneration,
    phase: child.status?.phase
  })
  // Each fixture keeps its key order: sorted as Metacontroller sends it, or the simulation's.
  return JSON.stringify(child) === JSON.stringify(sortedKeys(child)) ? sortedKeys(again) : again
}

let rewritten = 0
let unchanged = 0
for (const controller of readdirSync(root)) {
  for (const file of readdirSync(join(root, controller)).filter((name) => name.endsWith('.json') && !name.endsWith('.expected.json'))) {
    const path = join(root, controller, file)
    const text = readFileSync(path, 'utf8')
    const request = JSON.parse(text) as CompositeRequest
    if (request.parent === undefined) continue
    for (const objects of Object.values(request.children ?? {})) {
      for (const [key, child] of Object.entries(objects)) objects[key] = regenerated(request.parent, child)
    }
    const again = `${JSON.stringify(request, null, 2)}\n`
    if (again === text) {
      unchanged++
    } else {
      writeFileSync(path, again)
      rewritten++
    }
  }
}
process.stdout.write(`${rewritten} fixtures rewritten, ${unchanged} unchanged\n`)
