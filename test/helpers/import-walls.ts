import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import ts from 'typescript'

/**
 * The walls between the modules of a source tree, checked on what each module imports: every form of import, read
 * with TypeScript's parser (static, type-only, side-effect, re-export, dynamic `import()`). test/imports.test.ts checks
 * them on the repository, and on trees it builds with one violation planted each.
 */

export interface Edge {
  /** A module of the tree (its path from the root, `.ts`), or a package. */
  target: string
  /** Erased from the JavaScript: `import type`, `export type`, or `import('…')` in a type. */
  typeOnly: boolean
  /** An `import()` call; its target undefined when its argument is not a string literal. */
  dynamic: boolean
}

/** Every module of the tree under `folders` and what each imports. */
export type Graph = Map<string, Edge[]>

/** The folders whose modules import one another: the product, the tools, the entry points, the benchmark and the tests. */
export const SOURCE_FOLDERS = ['hooks', 'dev', 'scripts', 'bench', 'test']

function edgesOf (root: string, file: string): Edge[] {
  const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true)
  const edges: Edge[] = []
  const add = (specifier: ts.Expression | undefined, typeOnly: boolean, dynamic: boolean): void => {
    if (specifier === undefined) return
    if (!ts.isStringLiteralLike(specifier)) {
      edges.push({ target: '', typeOnly, dynamic })
      return
    }
    const name = specifier.text
    edges.push({ target: name.startsWith('.') ? normalize(join(dirname(file), name.replace(/\.js$/, '.ts'))) : name, typeOnly, dynamic })
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, node.importClause?.isTypeOnly ?? false, false)
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, node.isTypeOnly, false)
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0], false, true)
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal as ts.Expression, true, true)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return edges
}

/** The import graph of the `.ts` modules under `folders` of `root` (fixtures left out). */
export function importGraph (root: string, folders: readonly string[] = SOURCE_FOLDERS): Graph {
  const files = folders.filter((folder) => existsSync(join(root, folder))).flatMap((folder) => readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.startsWith('fixtures/'))
    .map((file) => join(folder, file)))
  return new Map(files.map((file) => [file, edgesOf(root, file)]))
}

const isModule = (graph: Graph, target: string): boolean => graph.has(target)

/** Every cycle of modules importing one another, through any form of import, each as `a -> b -> a`. */
export function cycles (graph: Graph): string[] {
  const found: string[] = []
  const done = new Set<string>()
  const visit = (file: string, path: string[]): void => {
    if (path.includes(file)) {
      found.push([...path.slice(path.indexOf(file)), file].join(' -> '))
      return
    }
    if (done.has(file)) return
    for (const { target } of graph.get(file) ?? []) if (isModule(graph, target)) visit(target, [...path, file])
    done.add(file)
  }
  for (const file of graph.keys()) visit(file, [])
  return found
}

/** The folders of hooks/ below the runtime that are no controller. */
const SHARED = ['runtime', 'http', 'framework', 'database']
const FRAMEWORK_ENTRY = join('hooks', 'framework', 'index.ts')
const DATABASE_ENTRY = join('hooks', 'database', 'index.ts')
const REGISTRY = join('hooks', 'controllers.ts')

/** The controller a module of hooks/ belongs to, by its folder; undefined for any other module. */
export function controllerOf (file: string): string | undefined {
  const [top, folder, rest] = file.split('/')
  return top === 'hooks' && rest !== undefined && folder !== undefined && !SHARED.includes(folder) ? folder : undefined
}

/** A module's layer in hooks/, from the top: the entry, the runtime, the registry, HTTP, the controllers, the framework, the database. */
function layerOf (file: string): { rank: number, name: string } {
  if (file === join('hooks', 'server.ts')) return { rank: 0, name: 'the entry' }
  if (file === REGISTRY) return { rank: 2, name: 'the registry' }
  const folder = file.split('/')[1] as string
  const rank = { runtime: 1, http: 3, framework: 5, database: 6 }[folder] ?? 4
  return { rank, name: SHARED.includes(folder) ? `hooks/${folder}/` : 'a controller' }
}

/** The edges between modules of hooks/, any form of import. */
function hooksEdges (graph: Graph): Array<[string, Edge]> {
  return [...graph].filter(([file]) => file.startsWith('hooks/')).flatMap(([file, edges]) => edges.map((edge): [string, Edge] => [file, edge]))
}

const shown = (file: string, edge: Edge): string => `${file} imports ${edge.target}${edge.dynamic ? ' (import())' : ''}`

/** An `import()` of hooks/ whose target is not a string literal: no wall can check it. */
export function uncheckedImports (graph: Graph): string[] {
  return hooksEdges(graph).filter(([, edge]) => edge.target === '').map(([file]) => `${file} has an import() of a computed name, which no check can follow`)
}

/** Imports of hooks/ that point up the layers. */
export function upwardImports (graph: Graph): string[] {
  return hooksEdges(graph)
    .filter(([file, edge]) => edge.target.startsWith('hooks/') && layerOf(edge.target).rank < layerOf(file).rank)
    .map(([file, edge]) => `${shown(file, edge)}: ${layerOf(file).name} imports ${layerOf(edge.target).name}`)
}

/** Imports by the framework of anything outside it: it knows no I/O provider, and no controller. */
export function frameworkReach (graph: Graph): string[] {
  return hooksEdges(graph)
    .filter(([file, edge]) => file.startsWith('hooks/framework/') && edge.target.startsWith('hooks/') && !edge.target.startsWith('hooks/framework/'))
    .map(([file, edge]) => `${shown(file, edge)}: the framework imports only its own modules`)
}

/** Imports of a controller's module from outside its folder: only the registry imports one, and only its index.ts. */
export function controllerImports (graph: Graph): string[] {
  return hooksEdges(graph).flatMap(([file, edge]) => {
    const controller = controllerOf(edge.target)
    if (controller === undefined || controllerOf(file) === controller) return []
    if (file === REGISTRY && edge.target === join('hooks', controller, 'index.ts')) return []
    return [`${shown(file, edge)}: only the registry imports a controller, through its index.ts`]
  })
}

/** Imports by a controller of anything but its own modules, the framework's entry and the database's entry. */
export function controllerReach (graph: Graph): string[] {
  return hooksEdges(graph).flatMap(([file, edge]) => {
    const controller = controllerOf(file)
    if (controller === undefined || !edge.target.startsWith('hooks/')) return []
    if (controllerOf(edge.target) === controller || edge.target === FRAMEWORK_ENTRY || edge.target === DATABASE_ENTRY) return []
    return [`${shown(file, edge)}: a controller imports its own modules, ${FRAMEWORK_ENTRY} and ${DATABASE_ENTRY}`]
  })
}

/** A controller as the registry declares it: its name is its folder's. */
export interface Declared { name: string, needs: readonly string[] }

/** Controllers whose modules import the database's entry without declaring `needs: ['postgres']`. */
export function undeclaredDatabase (graph: Graph, controllers: readonly Declared[]): string[] {
  return hooksEdges(graph).flatMap(([file, edge]) => {
    const controller = controllers.find((declared) => declared.name === controllerOf(file))
    if (!edge.target.startsWith('hooks/database/') || controller === undefined || controller.needs.includes('postgres')) return []
    return [`${shown(file, edge)}, but controller ${controller.name} does not declare needs: ['postgres']`]
  })
}

/** Packages of I/O, or of the server around the hooks: a pure module reaches none of them. */
const IMPURE = /^(node:(fs|net|http|https|http2|tls|dgram|dns|child_process|cluster|worker_threads|os|process|v8|readline|inspector)(\/.*)?|fs|net|http|https|child_process|pg|prom-client|fastify|@fastify\/.*)$/

/**
 * What a controller's pure core (its sync.ts) reaches through the imports that run: every module it loads, however
 * indirectly, and what each imports. None of them is I/O: a module of hooks/ outside the controllers and the
 * framework, or an I/O package.
 */
export function impureCores (graph: Graph): string[] {
  const cores = [...graph.keys()].filter((file) => controllerOf(file) !== undefined && file.endsWith('/sync.ts'))
  return cores.flatMap((core) => {
    const found: string[] = []
    const seen = new Set<string>()
    const visit = (file: string, path: string[]): void => {
      if (seen.has(file)) return
      seen.add(file)
      for (const edge of graph.get(file) ?? []) {
        if (edge.typeOnly) continue
        const via = [...path, file].join(' -> ')
        if (isModule(graph, edge.target)) {
          const outside = !(controllerOf(edge.target) !== undefined || edge.target.startsWith('hooks/framework/'))
          if (outside) found.push(`${via} -> ${edge.target}: a pure core loads no module of ${edge.target.split('/').slice(0, 2).join('/')}/`)
          else visit(edge.target, [...path, file])
        } else if (IMPURE.test(edge.target)) {
          found.push(`${via} imports ${edge.target}: a pure core reaches no I/O`)
        }
      }
    }
    visit(core, [])
    return found
  })
}
