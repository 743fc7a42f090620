import { isObject } from '../../hooks/framework/wire/objects.js'

/**
 * managedFields as the API server records them: which manager set which fields (FieldsV1), with the structure of
 * the built-in types reduced to the few rules the simulated objects need.
 */

type Json = Record<string, any>

/** Fields holding a map: the manager that set the map owns it too (`.`). A workload's selector is atomic instead. */
const MAPS = new Set(['labels', 'annotations', 'matchLabels', 'nodeSelector', 'requests', 'limits', 'capacity', 'selector'])
/** Optional structs (pointers in Go): owned like maps. */
const OPTIONAL_STRUCTS = new Set(['rollingUpdate', 'persistentVolumeClaimRetentionPolicy'])
/** Lists that always exist, so that no manager owns the list itself. */
const ALWAYS_PRESENT = new Set(['containers', 'conditions'])

/** The key the API server gives an item of a list map, or undefined for an item of an atomic list. */
function listKey (item: Json): Json | undefined {
  if (item.containerPort !== undefined) return { containerPort: item.containerPort, protocol: item.protocol ?? 'TCP' }
  if (item.port !== undefined) return { port: item.port, protocol: item.protocol ?? 'TCP' }
  if (item.mountPath !== undefined) return { mountPath: item.mountPath }
  if (item.uid !== undefined) return { uid: item.uid }
  if (item.type !== undefined) return { type: item.type }
  if (item.ip !== undefined) return { ip: item.ip }
  if (item.name !== undefined && item.spec === undefined) return { name: item.name }
  return undefined
}

/** The FieldsV1 of `value` (under field `key`), keys sorted as the API server writes them. */
export function fieldsOf (value: unknown, key?: string): Json {
  if (Array.isArray(value)) {
    const keys = value.map((item) => isObject(item) ? listKey(item) : undefined)
    if (key === 'containerStatuses' || keys.some((itemKey) => itemKey === undefined)) return {}
    // An owner reference is an atomic struct: its key is all that is recorded.
    const items = Object.fromEntries(value.map((item, i) => [`k:${JSON.stringify(keys[i])}`, key === 'ownerReferences' ? {} : { '.': {}, ...fieldsOf(item) }]))
    return ALWAYS_PRESENT.has(key ?? '') ? items : { '.': {}, ...items }
  }
  if (!isObject(value)) return {}
  if (key === 'selector' && 'matchLabels' in value) return {}
  const fields = Object.fromEntries(Object.keys(value).sort().map((k) => [`f:${k}`, fieldsOf(value[k], k)]))
  return MAPS.has(key ?? '') || OPTIONAL_STRUCTS.has(key ?? '') ? { '.': {}, ...fields } : fields
}

/** Fields set inside a map that another manager owns (no `.`), such as annotations added by a controller. */
export function fieldSet (keys: Iterable<string>): Json {
  return Object.fromEntries([...keys].sort().map((key) => [`f:${key}`, {}]))
}

export function managedEntry (apiVersion: string, manager: string, time: string, fields: Json, subresource?: string): Json {
  return { apiVersion, fieldsType: 'FieldsV1', fieldsV1: fields, manager, operation: 'Update', ...(subresource === undefined ? {} : { subresource }), time }
}
