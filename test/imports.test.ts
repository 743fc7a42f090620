import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { controllers } from '../hooks/controllers.js'
import {
  controllerImports, controllerReach, cycles, frameworkReach, importGraph, impureCores, uncheckedImports, undeclaredDatabase, upwardImports,
  type Declared, type Graph
} from './helpers/import-walls.js'

/**
 * The walls between modules (test/helpers/import-walls.ts), held by the repository, every form of import counted:
 * no module imports itself through others; hooks/ imports only down its layers; only the registry imports a
 * controller; a controller imports its own modules, the framework's entry and the database's, the last only when it
 * declares that it needs PostgreSQL; a controller's pure core loads no I/O, however indirectly. Each wall is also
 * shown to stop a violation planted in a small tree built for the test.
 */

const root = join(import.meta.dirname, '..')
const repository = importGraph(root)
const registry: Declared[] = controllers.map(({ name, needs }) => ({ name, needs }))

test('no module of hooks/, dev/, scripts/, bench/ or test/ imports itself through others', () => {
  assert.ok(repository.size > 200, `${repository.size} modules`)
  assert.deepEqual(cycles(repository), [])
})

test('every import of hooks/ points down the layers, or stays in its own, and names the module it imports', () => {
  assert.deepEqual(upwardImports(repository), [])
  assert.deepEqual(uncheckedImports(repository), [])
})

test('only the registry imports a controller, through its index.ts; the framework imports only its own modules', () => {
  assert.deepEqual(controllerImports(repository), [])
  assert.deepEqual(frameworkReach(repository), [])
})

test('a controller imports its own modules, the framework through its entry, and the database through its entry when it declares PostgreSQL', () => {
  assert.deepEqual(controllerReach(repository), [])
  assert.deepEqual(undeclaredDatabase(repository, registry), [])
  assert.ok(registry.some(({ needs }) => needs.includes('postgres')), 'a controller declares PostgreSQL')
})

test('a controller\'s pure core loads no configuration, metrics or I/O module, however indirectly', () => {
  const cores = [...repository.keys()].filter((file) => /^hooks\/[^/]+\/sync\.ts$/.test(file))
  assert.ok(cores.length >= controllers.length, `found the cores ${cores.join(', ')}`)
  assert.deepEqual(impureCores(repository), [])
})

test('scripts/ holds command-line entry points only, which no module imports; dev/, scripts/ and bench/ import nothing of test/', () => {
  const wrong = [...repository].flatMap(([file, edges]) => edges.flatMap(({ target }) => [
    ...(target.startsWith('scripts/') ? [`${file} imports the entry point ${target}`] : []),
    ...(!file.startsWith('test/') && target.startsWith('test/') ? [`${file} imports ${target}`] : [])
  ]))
  assert.deepEqual(wrong, [])
})

/** A small tree that holds every wall: an entry, a runtime, a registry of two controllers, HTTP, a framework, a database, dev tools. */
const TREE: Record<string, string> = {
  'hooks/server.ts': "import { serve } from './runtime/serve.js'\nawait serve()\n",
  'hooks/runtime/serve.ts': "import { controllers } from '../controllers.js'\nimport { routes } from '../http/routes.js'\nexport async function serve (): Promise<void> { routes(controllers) }\n",
  'hooks/controllers.ts': "import { shop } from './shop/index.js'\nimport { store } from './store/index.js'\nexport const controllers = [shop, store]\n",
  'hooks/http/routes.ts': "import type { Controller } from '../framework/controller.js'\nexport function routes (controllers: Controller[]): Controller[] { return controllers }\n",
  'hooks/framework/index.ts': "export type { Controller } from './controller.js'\nexport { answer } from './answer.js'\n",
  'hooks/framework/controller.ts': 'export interface Controller { name: string, needs: string[] }\n',
  'hooks/framework/answer.ts': 'export const answer = (value: unknown): unknown => value\n',
  'hooks/database/index.ts': "export { pool } from './pool.js'\n",
  'hooks/database/pool.ts': "import pg from 'pg'\nexport const pool = (): pg.Pool => new pg.Pool()\n",
  'hooks/shop/index.ts': "import { answer } from '../framework/index.js'\nimport { sync } from './sync.js'\nexport const shop = { name: 'shop', needs: [], sync, answer }\n",
  'hooks/shop/sync.ts': "import type pg from 'pg'\nimport { price } from './price.js'\nexport const sync = (n: number, _pool?: pg.Pool): number => price(n)\n",
  'hooks/shop/price.ts': 'export const price = (n: number): number => n * 2\n',
  'hooks/store/index.ts': "import { pool } from '../database/index.js'\nimport { sync } from './sync.js'\nexport const store = { name: 'store', needs: ['postgres'], sync, pool }\n",
  'hooks/store/sync.ts': 'export const sync = (): number => 1\n',
  'dev/a.ts': "import { b } from './b.js'\nexport const a = (): number => b\n",
  'dev/b.ts': 'export const b = 1\n'
}
const TREE_REGISTRY: Declared[] = [{ name: 'shop', needs: [] }, { name: 'store', needs: ['postgres'] }]

interface Findings { cycles: string[], upward: string[], unchecked: string[], controllerImports: string[], frameworkReach: string[], controllerReach: string[], undeclaredDatabase: string[], impureCores: string[] }

/** Every wall's findings on a tree. */
function walls (graph: Graph): Findings {
  return {
    cycles: cycles(graph),
    upward: upwardImports(graph),
    unchecked: uncheckedImports(graph),
    controllerImports: controllerImports(graph),
    frameworkReach: frameworkReach(graph),
    controllerReach: controllerReach(graph),
    undeclaredDatabase: undeclaredDatabase(graph, TREE_REGISTRY),
    impureCores: impureCores(graph)
  }
}

const NONE: Findings = { cycles: [], upward: [], unchecked: [], controllerImports: [], frameworkReach: [], controllerReach: [], undeclaredDatabase: [], impureCores: [] }

/** The walls' findings on the small tree with `changes` made to it, built in a folder of the test's own. */
function planted (t: TestContext, changes: Record<string, string> = {}): Findings {
  const tree = mkdtempSync(join(tmpdir(), 'import-walls-'))
  t.after(() => { rmSync(tree, { recursive: true, force: true }) })
  for (const [file, text] of Object.entries({ ...TREE, ...changes })) {
    mkdirSync(join(tree, dirname(file)), { recursive: true })
    writeFileSync(join(tree, file), text)
  }
  return walls(importGraph(tree, ['hooks', 'dev']))
}

test('the small tree holds every wall, a type-only import of pg in a core included', (t) => {
  assert.deepEqual(planted(t), NONE)
})

test('a side-effect import is an import: upwards, and around a cycle', (t) => {
  const found = planted(t, { 'hooks/framework/answer.ts': `import '../runtime/serve.js'\n${TREE['hooks/framework/answer.ts'] as string}` })
  assert.deepEqual(found.upward, ['hooks/framework/answer.ts imports hooks/runtime/serve.ts: hooks/framework/ imports hooks/runtime/'])
  assert.equal(found.cycles.length, 1, found.cycles.join('\n'))
})

test('a dynamic import() is an import: upwards and in a cycle, and one of a computed name is refused', (t) => {
  const found = planted(t, {
    'hooks/framework/answer.ts': "export const answer = async (value: unknown): Promise<unknown> => (await import('../controllers.js')).controllers.length + Number(value)\n",
    'hooks/database/pool.ts': "const name = './extra.js'\nexport const pool = async (): Promise<unknown> => await import(name)\n"
  })
  assert.deepEqual(found.upward, ['hooks/framework/answer.ts imports hooks/controllers.ts (import()): hooks/framework/ imports the registry'])
  assert.deepEqual(found.cycles, ['hooks/controllers.ts -> hooks/shop/index.ts -> hooks/framework/index.ts -> hooks/framework/answer.ts -> hooks/controllers.ts'])
  assert.deepEqual(found.unchecked, ['hooks/database/pool.ts has an import() of a computed name, which no check can follow'])
})

test('a pure core reaching node:fs through a helper of its own, or a module of the runtime, is impure', (t) => {
  const found = planted(t, {
    'hooks/shop/price.ts': "import { readFileSync } from 'node:fs'\nexport const price = (n: number): number => n * readFileSync('/dev/null').length\n",
    'hooks/store/sync.ts': "import { routes } from '../http/routes.js'\nexport const sync = (): number => routes([]).length\n"
  })
  assert.deepEqual(found.impureCores, [
    'hooks/shop/sync.ts -> hooks/shop/price.ts imports node:fs: a pure core reaches no I/O',
    'hooks/store/sync.ts -> hooks/http/routes.ts: a pure core loads no module of hooks/http/'
  ])
})

test('hooks/http/ importing a controller is refused: only the registry imports one, and only its index.ts', (t) => {
  const found = planted(t, {
    'hooks/http/routes.ts': "import type { Controller } from '../framework/controller.js'\nimport { shop } from '../shop/index.js'\nexport function routes (controllers: Controller[]): Controller[] { return [...controllers, shop] }\n",
    'hooks/controllers.ts': "import { shop } from './shop/index.js'\nimport { store } from './store/index.js'\nimport { sync } from './store/sync.js'\nexport const controllers = [shop, { ...store, sync }]\n"
  })
  assert.deepEqual(found.controllerImports, [
    'hooks/controllers.ts imports hooks/store/sync.ts: only the registry imports a controller, through its index.ts',
    'hooks/http/routes.ts imports hooks/shop/index.ts: only the registry imports a controller, through its index.ts'
  ])
})

test('the framework naming a database module in its types is refused', (t) => {
  const found = planted(t, { 'hooks/framework/controller.ts': "import type { pool } from '../database/index.js'\nexport interface Controller { name: string, needs: string[], io?: ReturnType<typeof pool> }\n" })
  assert.deepEqual(found.frameworkReach, ['hooks/framework/controller.ts imports hooks/database/index.ts: the framework imports only its own modules'])
})

test('a controller that uses the database without declaring PostgreSQL is refused, and so is one that reaches past an entry', (t) => {
  const found = planted(t, {
    'hooks/shop/index.ts': "import { answer } from '../framework/answer.js'\nimport { pool } from '../database/index.js'\nimport { sync } from './sync.js'\nexport const shop = { name: 'shop', needs: [], sync, answer, pool }\n",
    'hooks/store/index.ts': "import { pool } from '../database/pool.js'\nimport { sync } from './sync.js'\nexport const store = { name: 'store', needs: ['postgres'], sync, pool }\n"
  })
  assert.deepEqual(found.undeclaredDatabase, ['hooks/shop/index.ts imports hooks/database/index.ts, but controller shop does not declare needs: [\'postgres\']'])
  assert.deepEqual(found.controllerReach, [
    'hooks/shop/index.ts imports hooks/framework/answer.ts: a controller imports its own modules, hooks/framework/index.ts and hooks/database/index.ts',
    'hooks/store/index.ts imports hooks/database/pool.ts: a controller imports its own modules, hooks/framework/index.ts and hooks/database/index.ts'
  ])
})

test('a cycle among the development tools is found, as one in hooks/ is', (t) => {
  const found = planted(t, { 'dev/b.ts': "import type { a } from './a.js'\nexport const b = 1\nexport type A = typeof a\n" })
  assert.deepEqual(found.cycles, ['dev/a.ts -> dev/b.ts -> dev/a.ts'])
})
