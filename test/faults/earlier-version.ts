import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'

/** Earlier versions of the hook server, from the repository's history, to run next to this one on one database. */

const root = join(import.meta.dirname, '..', '..')

function git (...args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
  } catch (error) {
    throw new Error(`git ${args.join(' ')} failed (${(error as Error).message.split('\n')[0]}): this test runs earlier versions from the repository's history, so it needs a clone with its history (git fetch --unshallow)`)
  }
}

/** The last version without placement records: the parent of the commit that introduced their table. */
export function versionWithoutPlacements (): string {
  const [introduced] = git('log', '--reverse', '--format=%H', "-S'postgres-writer-rows'", 'HEAD', '--', 'hooks').split('\n')
  if (introduced === undefined || introduced === '') throw new Error('no commit of hooks/ introduces the placements table \'postgres-writer-rows\': the history is not the one this test was written for')
  return git('rev-parse', `${introduced}^`)
}

/** The runtime dependencies a package.json names, by package. */
function dependenciesOf (json: string): Record<string, string> {
  return (JSON.parse(json) as { dependencies?: Record<string, string> }).dependencies ?? {}
}

/**
 * The files of `commit` in a folder of their own, removed after the test, with this checkout's node_modules. The
 * packages the commit depends on that this checkout does not have at the same version are installed from the registry
 * for it alone, and found first.
 */
export async function checkoutOf (t: TestContext, commit: string): Promise<string> {
  const theirs = dependenciesOf(git('show', `${commit}:package.json`))
  const ours = dependenciesOf(readFileSync(join(root, 'package.json'), 'utf8'))
  const missing = Object.entries(theirs).filter(([name, version]) => ours[name] !== version).map(([name, version]) => `${name}@${version}`)
  const folder = await mkdtemp(join(tmpdir(), 'hooks-earlier-'))
  t.after(async () => { await rm(folder, { recursive: true, force: true }) })
  execFileSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C "${folder}"`], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] })
  if (missing.length === 0) {
    await symlink(join(root, 'node_modules'), join(folder, 'node_modules'))
    return folder
  }
  const own = join(folder, '.own-dependencies')
  execFileSync('npm', ['install', '--no-save', '--no-package-lock', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', '--prefix', own, ...missing], { stdio: ['ignore', 'ignore', 'pipe'] })
  await linkPackages([join(own, 'node_modules'), join(root, 'node_modules')], join(folder, 'node_modules'))
  return folder
}

/** A node_modules folder of links to the packages of `sources`, the first source's package where two have one. */
async function linkPackages (sources: string[], target: string): Promise<void> {
  await mkdir(target, { recursive: true })
  const linked = new Set<string>()
  for (const source of sources) {
    for (const entry of await readdir(source, { withFileTypes: true })) {
      // A scope (@name) is a folder of packages: its packages are linked one by one.
      const names = entry.name.startsWith('@') && entry.isDirectory()
        ? (await readdir(join(source, entry.name))).map((name) => join(entry.name, name))
        : [entry.name]
      for (const name of names) {
        if (linked.has(name)) continue
        linked.add(name)
        await mkdir(join(target, name, '..'), { recursive: true })
        await symlink(join(source, name), join(target, name))
      }
    }
  }
}
