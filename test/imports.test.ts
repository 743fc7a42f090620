import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { test } from 'node:test'

/** The server's modules import one another without a cycle, and only downwards through its layers. */

const hooks = join(import.meta.dirname, '..', 'hooks')

function importsOf (file: string): string[] {
  const text = readFileSync(join(hooks, file), 'utf8')
  return [...text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)\.js'/gm)].map((match) => normalize(join(dirname(file), `${match[1] as string}.ts`)))
}

/** Every module of hooks/ and what it imports of hooks/, type-only imports included. */
const graph = new Map(readdirSync(hooks, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts')).map((file) => [file, importsOf(file)]))

/** The folders of the layers below the controllers; any other folder of hooks/ is a controller. */
const SHARED = ['runtime', 'http', 'framework', 'database']

/** A module's layer, from the top: the entry, the runtime, the registry, HTTP, the controllers, the framework, the database. */
function layerOf (file: string): { rank: number, name: string } {
  if (file === 'server.ts') return { rank: 0, name: 'the entry' }
  if (file === 'controllers.ts') return { rank: 2, name: 'the registry' }
  const folder = file.split('/')[0] as string
  const rank = { runtime: 1, http: 3, framework: 5, database: 6 }[folder] ?? 4
  return { rank, name: SHARED.includes(folder) ? `${folder}/` : 'a controller' }
}

const controllerOf = (file: string): string | undefined => {
  const folder = file.split('/')[0] as string
  return file.includes('/') && !SHARED.includes(folder) ? folder : undefined
}

test('no module of hooks/ imports itself through others', () => {
  const cycles: string[] = []
  const done = new Set<string>()
  const visit = (file: string, path: string[]): void => {
    if (path.includes(file)) {
      cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '))
      return
    }
    if (done.has(file)) return
    for (const next of graph.get(file) ?? []) visit(next, [...path, file])
    done.add(file)
  }
  for (const file of graph.keys()) visit(file, [])
  assert.deepEqual(cycles, [])
})

test('every import of hooks/ points down the layers, or stays in its own', () => {
  const upwards = [...graph].flatMap(([file, imports]) => imports
    .filter((target) => layerOf(target).rank < layerOf(file).rank)
    .map((target) => `${file} (${layerOf(file).name}) imports ${target} (${layerOf(target).name})`))
  assert.deepEqual(upwards, [])
})

test('a controller imports its own modules, the framework through its one entry, and the I/O it declares', () => {
  const astray = [...graph].flatMap(([file, imports]) => {
    const controller = controllerOf(file)
    if (controller === undefined) return []
    return imports
      .filter((target) => !(controllerOf(target) === controller || target === join('framework', 'index.ts') || target.startsWith('database/')))
      .map((target) => `${file} imports ${target}`)
  })
  assert.deepEqual(astray, [])
})

test('a controller\'s pure core imports no configuration, metrics or I/O module', () => {
  const cores = [...graph.keys()].filter((file) => controllerOf(file) !== undefined && file.endsWith('/sync.ts'))
  assert.ok(cores.length >= 4, `found the cores ${cores.join(', ')}`)
  const impure = cores.flatMap((file) => {
    const text = readFileSync(join(hooks, file), 'utf8')
    const packages = [...text.matchAll(/^import\s[^'"]*?from\s+'([^.'][^']*)'/gm)].map((match) => match[1] as string)
    return [
      ...(graph.get(file) ?? []).filter((target) => controllerOf(target) === undefined && target !== join('framework', 'index.ts')),
      ...packages.filter((name) => name.startsWith('node:') || name === 'pg' || name === 'prom-client' || name === 'fastify')
    ].map((target) => `${file} imports ${target}`)
  })
  assert.deepEqual(impure, [])
})

test('scripts/ holds command-line entry points only, which no module imports; dev/, scripts/ and bench/ import nothing of test/', () => {
  const root = join(hooks, '..')
  const sources = ['hooks', 'dev', 'scripts', 'bench', 'test'].flatMap((folder) => readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.startsWith('fixtures/'))
    .map((file) => join(folder, file)))
  const wrong = sources.flatMap((file) => {
    const imported = [...readFileSync(join(root, file), 'utf8').matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm)].map((match) => normalize(join(dirname(file), match[1] as string)))
    return [
      ...imported.filter((target) => target.startsWith('scripts/')).map((target) => `${file} imports the entry point ${target}`),
      ...(file.startsWith('test/') ? [] : imported.filter((target) => target.startsWith('test/')).map((target) => `${file} imports ${target}`))
    ]
  })
  assert.deepEqual(wrong, [])
})
