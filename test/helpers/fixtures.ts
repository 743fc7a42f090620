import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', 'fixtures')

/** A fixture request as Metacontroller sends it (test/fixtures/<controller>/<name>.json), parsed afresh. */
export function fixture<T = Record<string, any>> (controller: string, name: string): T {
  return JSON.parse(readFileSync(join(root, controller, `${name}.json`), 'utf8')) as T
}

export function fixturePath (controller: string, name: string): string {
  return join(root, controller, `${name}.json`)
}

/** The cases of a controller's request fixtures (`<case>.json`, not their `.expected.json` answers); at least one. */
export function fixtureNames (controller: string): string[] {
  const folder = join(root, controller)
  const names = existsSync(folder)
    ? readdirSync(folder).filter((file) => file.endsWith('.json') && !file.endsWith('.expected.json')).sort().map((file) => file.slice(0, -'.json'.length))
    : []
  if (names.length === 0) {
    throw new Error(`test/fixtures/${controller}/ holds no request fixture: every controller needs at least one there (\`npm run new-controller\` writes two, \`npm run new-fixture\` more: see docs/writing-a-controller.md)`)
  }
  return names
}

/** `request` as Metacontroller sends it to `hook`: `finalizing` is true on finalize, false on sync. */
export function forHook<T extends object> (request: T, hook: 'sync' | 'finalize'): T & { finalizing: boolean } {
  return { ...request, finalizing: hook === 'finalize' }
}

/** Every request fixture of a controller, in the order of their names. */
export function requestFixtures (controller: string): Array<Record<string, any>> {
  return fixtureNames(controller).map((name) => fixture(controller, name))
}
