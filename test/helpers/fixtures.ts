import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', 'fixtures')

/** A fixture request as Metacontroller sends it (test/fixtures/<controller>/<name>.json), parsed afresh. */
export function fixture<T = Record<string, any>> (controller: string, name: string): T {
  return JSON.parse(readFileSync(join(root, controller, `${name}.json`), 'utf8')) as T
}

export function fixturePath (controller: string, name: string): string {
  return join(root, controller, `${name}.json`)
}
