import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', 'fixtures')

/** A fixture request as Metacontroller sends it (test/fixtures/<controller>/<name>.json), parsed afresh. */
export function fixture<T = Record<string, any>> (controller: string, name: string): T {
  return JSON.parse(readFileSync(join(root, controller, `${name}.json`), 'utf8')) as T
}

export function fixturePath (controller: string, name: string): string {
  return join(root, controller, `${name}.json`)
}

/** Every request fixture of a controller (the `<case>.json` files, not their `.expected.json` answers). */
export function requestFixtures (controller: string): Array<Record<string, any>> {
  return readdirSync(join(root, controller))
    .filter((file) => file.endsWith('.json') && !file.endsWith('.expected.json'))
    .sort()
    .map((file) => fixture(controller, file.slice(0, -'.json'.length)))
}
