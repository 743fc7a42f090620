import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { KubernetesObject } from '../../hooks/framework/wire/schemas.js'
import { identity } from '../metacontroller-apply.js'
import type { Json } from './kube-api.js'

/**
 * The objects of a controller's child kinds, read once and kept in a file, not in memory: what memory keeps of each
 * is its identity and where it is in the file, by the uid of its controller, or by its namespace for an orphan. A
 * parent's children are read back when it is planned, so that the plan holds the children of one parent at a time.
 */

type Place = [offset: number, length: number]

export class ChildSpool {
  private readonly dir = mkdtempSync(join(tmpdir(), 'plan-children-'))
  private readonly file = openSync(join(this.dir, 'children'), 'w+')
  private size = 0
  private readonly owned = new Map<string, Place[]>()
  private readonly orphaned = new Map<string, Place[]>()
  private readonly identities = new Set<string>()

  add (object: Json): void {
    this.identities.add(identity(object as KubernetesObject))
    const text = Buffer.from(JSON.stringify(object))
    writeSync(this.file, text, 0, text.length, this.size)
    const refs: Json[] = Array.isArray(object.metadata?.ownerReferences) ? object.metadata.ownerReferences : []
    const owner: unknown = refs.find((ref) => ref.controller === true)?.uid
    const [index, key] = owner === undefined ? [this.orphaned, String(object.metadata?.namespace ?? '')] : [this.owned, String(owner)]
    let places = index.get(key)
    if (places === undefined) index.set(key, places = [])
    places.push([this.size, text.length])
    this.size += text.length
  }

  private read (places: readonly Place[] | undefined): Json[] {
    return (places ?? []).map(([offset, length]) => {
      const text = Buffer.alloc(length)
      readSync(this.file, text, 0, length, offset)
      return JSON.parse(text.toString('utf8')) as Json
    })
  }

  /** The objects whose controller has this uid. */
  controlledBy (uid: string): Json[] {
    return this.read(this.owned.get(uid))
  }

  /** The objects without a controller in `namespace`; in every namespace when it is undefined. */
  orphans (namespace: string | undefined): Json[] {
    return namespace === undefined ? [...this.orphaned.values()].flatMap((places) => this.read(places)) : this.read(this.orphaned.get(namespace))
  }

  /** Whether an object of that identity exists (kind, API version, namespace, name), whoever controls it. */
  exists (key: string): boolean {
    return this.identities.has(key)
  }

  close (): void {
    closeSync(this.file)
    rmSync(this.dir, { recursive: true, force: true })
  }
}
