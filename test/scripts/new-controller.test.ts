import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'

const root = join(import.meta.dirname, '..', '..')

/** A throwaway copy of the repository as it is (tracked and new files), sharing node_modules. */
async function copyOfRepository (): Promise<string> {
  const copy = await mkdtemp(join(tmpdir(), 'hooks-new-controller-'))
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  for (const file of listed.split('\0').filter((path) => path !== '' && existsSync(join(root, path)))) {
    await mkdir(dirname(join(copy, file)), { recursive: true })
    await copyFile(join(root, file), join(copy, file))
  }
  await symlink(join(root, 'node_modules'), join(copy, 'node_modules'))
  return copy
}

/** Runs a command in `cwd` as a person would; a failure shows its output. */
function run (cwd: string, command: string, args: string[]): string {
  // Without the test runner's own variables, a nested `node --test` reports as if run by hand.
  const { NODE_TEST_CONTEXT: _context, UPDATE_GOLDEN: _update, ...env } = process.env
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8' })
  assert.equal(result.status, 0, `${command} ${args.join(' ')} failed:\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

test('`npm run new-controller` adds a fifth controller that type-checks, passes its tests and has fresh manifests', { timeout: 300_000 }, async (t) => {
  const copy = await copyOfRepository()
  t.after(async () => { await rm(copy, { recursive: true, force: true }) })

  run(copy, 'npm', ['run', 'new-controller', '--', 'greeting'])
  for (const path of [
    'hooks/greeting/resource.ts', 'hooks/greeting/sync.ts', 'hooks/greeting/index.ts',
    'test/greeting/sync.test.ts', 'test/fixtures/greeting/first-sync.json', 'test/fixtures/greeting/first-sync.expected.json',
    'manifests/examples/greeting.yaml', 'manifests/crds/greeting.yaml', 'manifests/controllers/greeting.yaml'
  ]) {
    assert.ok(existsSync(join(copy, path)), `${path} was written`)
  }
  assert.match(await readFile(join(copy, 'hooks', 'controllers.ts'), 'utf8'), /import \{ greeting \} from '\.\/greeting\/index\.js'[\s\S]*pulsarConsumer, greeting\]/)
  const golden = JSON.parse(await readFile(join(copy, 'test', 'fixtures', 'greeting', 'first-sync.expected.json'), 'utf8'))
  assert.deepEqual(golden.children.map((child: { kind: string, metadata: { name: string } }) => `${child.kind} ${child.metadata.name}`), ['ConfigMap greeting-sample-greeting'])

  run(copy, join(copy, 'node_modules', '.bin', 'tsc'), ['--noEmit', '-p', copy])
  // Its own test, the manifests' freshness, and the tests that hold every registered controller to the contract.
  run(copy, process.execPath, [
    '--import', 'tsx', '--test',
    'test/greeting/sync.test.ts', 'test/scripts/manifests.test.ts', 'test/manifests.test.ts', 'test/parent.test.ts', 'test/wire/schemas.test.ts'
  ])
  assert.match(run(copy, process.execPath, ['--import', 'tsx', 'scripts/render.ts', 'manifests/examples/greeting.yaml']), /kind: ConfigMap\n\s+metadata:\n\s+name: greeting-sample-greeting/)
})
