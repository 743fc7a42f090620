import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { test, type TestContext } from 'node:test'
import { developmentDataDir } from '../../dev/embedded-postgres.js'
import { repositoryCopy, runIn } from '../helpers/repository-copy.js'

/**
 * Every command of package.json that runs a file of this repository (`tsx <file>`), taken from package.json, as a
 * person runs it (`npm run -s <name> -- …`) in a copy of the repository that holds a development database: `--help`
 * prints its usage and exits 0 having done nothing else, and a flag it does not know is refused in one line that names
 * the flags it knows, with exit code 2, having done nothing either. Nothing: no file of the copy and none of its
 * development database is written, added or removed, and no server or database is left running.
 */

const root = join(import.meta.dirname, '..', '..')
const { name: packageName, version, scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string, version: string, scripts: Record<string, string> }
const ours = Object.entries(scripts).filter(([, command]) => command.startsWith('tsx ')).map(([name]) => name)

/** Every file under `dir` (node_modules and .git aside) with its size and modification time. */
function snapshot (dir: string): Map<string, string> {
  const files = new Map<string, string>()
  if (!existsSync(dir)) return files
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name)
    const name = relative(dir, path)
    if (name.startsWith('node_modules') || name.startsWith('.git')) continue
    const stat = statSync(path)
    files.set(name, entry.isDirectory() ? 'dir' : `${stat.size} ${stat.mtimeMs}`)
  }
  return files
}

interface Workspace {
  /** Runs `npm run -s <name> -- <args>` in the copy; fails the test if it wrote anything. */
  run: (name: string, args: string[]) => Promise<{ status: number | null, stdout: string, stderr: string }>
}

/** A copy of the repository with a development database (a stand-in for PostgreSQL's files) for the commands to spare. */
async function workspace (t: TestContext): Promise<Workspace> {
  const copy = await repositoryCopy(t)
  const dataDir = developmentDataDir(copy)
  await mkdir(dataDir, { recursive: true })
  t.after(async () => { await rm(dataDir, { recursive: true, force: true }) })
  await writeFile(join(dataDir, 'PG_VERSION'), '17\n')
  await writeFile(join(dataDir, 'rows'), 'what the developer wrote\n')
  const before = [snapshot(copy), snapshot(dataDir)]
  return {
    run: async (name, args) => {
      const run = await runIn(copy, 'npm', ['run', '-s', name, '--', ...args], { env: { DATABASE_URL: undefined }, timeoutMs: 90_000 })
      assert.deepEqual([snapshot(copy), snapshot(dataDir)], before, `npm run ${name} -- ${args.join(' ')} wrote, added or removed files:\n${run.stdout}${run.stderr}`)
      return run
    }
  }
}

/** `work` over `items`, a few at a time: each command starts Node twice (npm and the command). */
async function fewAtATime<T> (items: readonly string[], work: (item: string) => Promise<T>): Promise<T[]> {
  const results: T[] = []
  for (let start = 0; start < items.length; start += 6) results.push(...await Promise.all(items.slice(start, start + 6).map(work)))
  return results
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

test('package.json\'s commands run this repository\'s files with tsx, or a tool of a dependency that has its own --help', () => {
  for (const [name, command] of Object.entries(scripts).filter(([name]) => !ours.includes(name))) {
    const program = command.split(' ')[0] ?? ''
    assert.ok(existsSync(join(root, 'node_modules', '.bin', program)), `npm run ${name} runs ${command}: neither tsx nor a dependency's program`)
  }
  assert.ok(ours.length >= 10, ours.join(', '))
})

test('every command of package.json: --help, a flag it does not know, and --version', { timeout: 900_000 }, async (t) => {
  const { run } = await workspace(t)
  const helps = await fewAtATime(ours, async (name) => await run(name, ['--help']))

  await t.test('--help: every command prints its usage and exits 0, and does nothing else', () => {
    ours.forEach((name, i) => {
      const help = helps[i]
      assert.equal(help?.status, 0, `npm run ${name} -- --help: ${help?.stderr}`)
      assert.match(help.stdout, new RegExp(`^usage: npm (run (-s )?)?${escaped(name)}( |\\n|$)`), `npm run ${name} -- --help`)
      assert.ok(help.stdout.trim().split('\n').length >= 2, `npm run ${name} -- --help says what it does, below its usage line:\n${help.stdout}`)
      assert.equal(help.stderr, '', `npm run ${name} -- --help`)
    })
  })

  await t.test('a flag a command does not know: one line naming the flags it knows, exit code 2, nothing done', async () => {
    const runs = await fewAtATime(ours, async (name) => await run(name, ['--no-such-flag']))
    ours.forEach((name, i) => {
      const refused = runs[i]
      assert.equal(refused?.status, 2, `npm run ${name} -- --no-such-flag: ${refused?.stdout}${refused?.stderr}`)
      assert.match(refused.stderr, /^unknown flag --no-such-flag: it knows (--[a-z-]+.*, )?--help\/-h(, --version)?\n$/, `npm run ${name} -- --no-such-flag`)
      assert.equal(refused.stdout, '', `npm run ${name} -- --no-such-flag`)
    })
  })

  await t.test('--version: npm start and npm run plan, and every command whose usage offers it, print the version', async () => {
    const offering = ours.filter((_, i) => helps[i]?.stdout.split('\n')[0]?.includes('--version') === true)
    assert.ok(offering.includes('start') && offering.includes('plan'), offering.join(', '))
    for (const name of offering) assert.deepEqual(await run(name, ['--version']), { status: 0, stdout: `${packageName} ${version}\n`, stderr: '' }, name)
  })
})
