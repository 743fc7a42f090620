import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { build, type BuildFailure } from 'esbuild'

/**
 * The repository's TypeScript compiled to JavaScript once for a test run, so that node:test starts each test file, and
 * each server a test starts, without a TypeScript loader: a loader's hooks cost each such process about 1 s of CPU,
 * and its cache of compiled files is empty in a fresh clone. Source maps keep stack traces and coverage on the
 * TypeScript.
 */

/** The folders whose TypeScript a test may import. */
const FOLDERS = ['hooks', 'dev', 'scripts', 'test', 'bench']

/** Each run's tree is a folder of `.cache/compiled` named by the process that made it. */
const TREES = join('.cache', 'compiled')

function typescriptIn (folder: string): string[] {
  if (!existsSync(folder)) return []
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

/** Whether the process `pid` still runs. */
function running (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export interface CompiledTree {
  /** The folder that holds the compiled files, each at its source's path with `.js` for `.ts`. */
  root: string
  /** Where the compiled `path` (a `.ts` file, relative to the repository) is. */
  compiled: (path: string) => string
  remove: () => void
}

/**
 * Compiles the TypeScript of `repository`'s folders, and the files `also` (its test files outside them, relative to
 * it), into a tree of this process's own (runs at once, nested ones included, do not share one), after removing the
 * trees of processes that ended without removing theirs. About 0.5 s. Rejects with the first syntax error, in one
 * line.
 */
export async function compileTree (repository: string, also: readonly string[] = []): Promise<CompiledTree> {
  const trees = join(repository, TREES)
  mkdirSync(trees, { recursive: true })
  for (const entry of readdirSync(trees, { withFileTypes: true })) {
    if (entry.isDirectory() && !running(Number(entry.name))) rmSync(join(trees, entry.name), { recursive: true, force: true })
  }
  const root = join(trees, String(process.pid))
  const sources = [...new Set([...FOLDERS.flatMap((folder) => typescriptIn(join(repository, folder))), ...also.map((path) => join(repository, path))])]
  const byFolder = new Map<string, string[]>()
  for (const path of sources) byFolder.set(dirname(path), [...byFolder.get(dirname(path)) ?? [], path])
  // A build per folder: a compiled module's `import.meta.dirname` is its source's folder, so that the paths it builds
  // from it (the fixtures, the manifests, the repository's root) are those it finds when it runs from source.
  const builds = await Promise.allSettled([...byFolder].map(async ([folder, entryPoints]) => await build({
    entryPoints,
    outdir: join(root, relative(repository, folder)),
    absWorkingDir: repository,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    sourcemap: 'linked',
    sourcesContent: false,
    define: { 'import.meta.dirname': JSON.stringify(folder) },
    logLevel: 'silent'
  })))
  const errors = builds.flatMap((settled) => settled.status === 'rejected' ? (settled.reason as BuildFailure).errors : [])
  if (errors.length > 0) {
    rmSync(root, { recursive: true, force: true })
    const [{ text, location }] = errors as [typeof errors[number]]
    throw new Error(`${location === null ? '' : `${location.file}:${location.line}:${location.column + 1}: `}${text}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}`)
  }
  return {
    root,
    compiled: (path) => join(root, path.replace(/\.ts$/, '.js')),
    remove: () => { rmSync(root, { recursive: true, force: true }) }
  }
}
