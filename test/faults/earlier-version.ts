import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, symlink } from 'node:fs/promises'
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

/**
 * The files of `commit` in a folder of their own, removed after the test, with this checkout's node_modules: so the
 * commit must depend on the same packages as this checkout.
 */
export async function checkoutOf (t: TestContext, commit: string): Promise<string> {
  const dependencies = (json: string): string => JSON.stringify((JSON.parse(json) as { dependencies: unknown }).dependencies)
  const theirs = dependencies(git('show', `${commit}:package.json`))
  const ours = dependencies(readFileSync(join(root, 'package.json'), 'utf8'))
  if (theirs !== ours) throw new Error(`${commit} depends on ${theirs}, this checkout on ${ours}: install its own dependencies to run it`)
  const folder = await mkdtemp(join(tmpdir(), 'hooks-earlier-'))
  t.after(async () => { await rm(folder, { recursive: true, force: true }) })
  execFileSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C "${folder}"`], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] })
  await symlink(join(root, 'node_modules'), join(folder, 'node_modules'))
  return folder
}
