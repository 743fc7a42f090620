import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { parse } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { CONTRACT_TESTS, QUICK_TESTS } from '../../dev/check.js'
import { CommandError } from '../../dev/command.js'
import { newController } from '../../dev/new-controller.js'
import { repositoryCopy, runIn, succeedIn } from '../helpers/repository-copy.js'

/**
 * `npm run new-controller` (dev/new-controller.ts): run as a command in a copy of the repository, which it changes and
 * whose own commands it runs; its refusals in-process.
 */

const root = join(import.meta.dirname, '..', '..')

/** Every file under `dir` with its content. */
function contents (dir: string): Map<string, string> {
  return new Map(readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .map((path) => [path.slice(dir.length + 1), readFileSync(path, 'utf8')]))
}

/** The first of `names` that the copy has no controller of (a developer's own may be there already), and its plural's ending. */
function freeName (copy: string, names: string[], plural: string): [string, string] {
  const name = names.find((candidate) => !existsSync(join(copy, 'hooks', candidate)))
  assert.ok(name !== undefined, `${names.join(', ')} are all taken`)
  return [name, plural]
}

test('two controllers scaffolded in a copy pass the type check, lint and every contract test of a registered controller there, with no test edited; a childResources change without npm run generate fails the check, which says to run it', { timeout: 600_000 }, async (t) => {
  const copy = await repositoryCopy(t)
  const testsBefore = contents(join(copy, 'test'))

  const scaffolded = [freeName(copy, ['config-copy', 'file-copy', 'data-copy'], 'copies'), freeName(copy, ['policy', 'access-policy', 'egress-policy'], 'policies')]
  for (const [name] of scaffolded) {
    const output = await succeedIn(copy, 'npm', ['run', '-s', 'new-controller', '--', name])
    // What it wrote, and nothing it left as it was.
    assert.deepEqual(output.split('\n').filter((line) => /^(wrote|rewrote|removed) /.test(line)).map((line) => line.split(/[ ,]/)[1]).sort(), [
      ...['resource.ts', 'sync.ts', 'index.ts'].map((file) => `hooks/${name}/${file}`),
      ...['crds', 'controllers', 'examples'].map((folder) => `manifests/${folder}/${name}.yaml`),
      'manifests/crds/kustomization.yaml', 'manifests/controllers/kustomization.yaml',
      `test/fixtures/${name}/first-sync.json`, `test/fixtures/${name}/steady-state.json`
    ].sort(), output)
    assert.match(output, new RegExp(`npm run check -- ${name}\``))
  }

  // The copy's own commands see the new controllers: its registry lists them, everything generated is up to date,
  // and new-fixture writes a third case of the last one.
  const registered = await succeedIn(copy, process.execPath, ['--import', 'tsx', '--eval', "import('./hooks/controllers.ts').then(({ controllers }) => console.log(JSON.stringify(controllers.map((c) => c.name))))"])
  assert.equal(await succeedIn(copy, 'npm', ['run', '-s', 'generate']), 'every generated file is up to date\n')
  const [, [last]] = scaffolded as [[string, string], [string, string]]
  assert.match(await succeedIn(copy, 'npm', ['run', '-s', 'new-fixture', '--', last, 'again', '--after', 'steady-state']), new RegExp(`^wrote test/fixtures/${last}/again\\.json, and its answer \\(200\\)`))
  assert.deepEqual(JSON.parse(registered), [...controllers.map((c) => c.name), ...scaffolded.map(([name]) => name)])
  for (const [name, plural] of scaffolded) {
    const crd = parse(readFileSync(join(copy, 'manifests', 'crds', `${name}.yaml`), 'utf8'))
    const controller = parse(readFileSync(join(copy, 'manifests', 'controllers', `${name}.yaml`), 'utf8'))
    assert.ok(crd.spec.names.plural.endsWith(plural), crd.spec.names.plural)
    assert.equal(controller.spec.parentResource.resource, crd.spec.names.plural)
  }
  const testsAfter = contents(join(copy, 'test'))
  for (const [path, content] of testsBefore) assert.equal(testsAfter.get(path), content, `test/${path} was changed`)

  const t0 = Date.now()
  const names = scaffolded.map(([name]) => name)
  // The quick check, and beside it the rest of the contract, which the quick check leaves to npm test.
  const rest = CONTRACT_TESTS.filter((file) => !QUICK_TESTS.includes(file))
  const [checked] = await Promise.all([
    succeedIn(copy, 'npm', ['run', '-s', 'check', '--', ...names]),
    succeedIn(copy, process.execPath, ['--import', 'tsx', 'scripts/run-tests.ts', `--test-name-pattern=^(${names.join('|')}): `, ...rest])
  ])
  t.diagnostic(`npm run check -- ${names.join(' ')} and the rest of their contract tests in the copy: ${((Date.now() - t0) / 1000).toFixed(0)} s`)
  assert.match(checked, new RegExp(`^${names.join(', ')}: types, lint and the quick contract tests pass`, 'm'))

  // The step the writing-a-controller page asks for after a change of the child kinds, forgotten.
  const [[first]] = scaffolded as [[string, string]]
  const index = join(copy, 'hooks', first, 'index.ts')
  writeFileSync(index, readFileSync(index, 'utf8').replace("updateStrategy: 'InPlace' }]", "updateStrategy: 'InPlace' }, { apiVersion: 'v1', kind: 'Secret', resource: 'secrets', updateStrategy: 'InPlace' }]"))
  const stale = await runIn(copy, 'npm', ['run', '-s', 'check', '--', first])
  assert.equal(stale.status, 1, stale.stdout)
  assert.match(stale.stdout, new RegExp(`manifests/controllers/${first}\\.yaml is stale: run \`npm run generate\``))
  assert.match(stale.stdout, new RegExp(`no fixture of ${first} observes a v1 Secret: add one`))
  assert.match(stale.stderr, /^tests failed, above\. A manifest that is stale: npm run generate\./)
})

test('a name that is taken, or that cannot name a controller, is refused with the reason, and nothing is written', async () => {
  const refusals: Array<[string[], RegExp]> = [
    [['podset'], /^hooks\/podset\/ exists already: choose another name$/],
    [['Config_Copy'], /^"Config_Copy" cannot name a controller: use at most 40 lowercase letters, digits and '-'/],
    [['class'], /^"class" cannot name a controller: class is a reserved word of TypeScript, and the scaffold names the controller's variable with it$/],
    [[], /^usage: npm run new-controller -- <name>/],
    [['a', 'b'], /^usage: /]
  ]
  for (const [args, message] of refusals) {
    let printed = ''
    await assert.rejects(newController(args, controllers, root, { cwd: root, stdin: async () => '', stdout: (text) => { printed += text } }),
      (error: Error) => error instanceof CommandError && message.test(error.message), args.join(' '))
    assert.equal(printed, '', args.join(' '))
  }
})
