import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { parse } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { repositoryCopy, runIn, succeedIn } from '../helpers/repository-copy.js'

/**
 * `npm run test:scaffold`: `npm run new-controller` (dev/new-controller.ts) run as a command in a copy of the
 * repository, which it changes and whose own commands it runs there, up to the whole `npm test`. Its own tier, out of
 * `npm test`: it runs `npm test` once more, in the copy.
 */

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

test('controllers scaffolded in a copy pass the whole npm test there, with no test edited; one whose childResources changed without npm run generate fails the check, which says to run it', { timeout: 3_600_000 }, async (t) => {
  const copy = await repositoryCopy(t)
  const scaffoldedAt = Date.now()
  const testsBefore = contents(join(copy, 'test'))

  const scaffolded = [
    freeName(copy, ['config-copy', 'file-copy', 'data-copy'], 'copies'),
    freeName(copy, ['policy', 'access-policy', 'egress-policy'], 'policies'),
    freeName(copy, ['disk-quota', 'space-quota', 'storage-quota'], 'quotas')
  ] as const
  for (const [name] of scaffolded) {
    const output = await succeedIn(copy, 'npm', ['run', '-s', 'new-controller', '--', name])
    // What it wrote, and nothing it left as it was.
    assert.deepEqual(output.split('\n').filter((line) => /^(wrote|rewrote|removed) /.test(line)).map((line) => line.split(/[ ,]/)[1]).sort(), [
      ...['resource.ts', 'sync.ts', 'index.ts'].map((file) => `hooks/${name}/${file}`),
      ...['crds', 'controllers', 'examples'].map((folder) => `manifests/${folder}/${name}.yaml`),
      'manifests/crds/kustomization.yaml', 'manifests/controllers/kustomization.yaml', 'manifests/plan/cluster-role.yaml',
      `test/fixtures/${name}/first-sync.json`, `test/fixtures/${name}/steady-state.json`
    ].sort(), output)
    assert.match(output, new RegExp(`npm run check -- ${name}\``))
  }

  // The copy's own commands see the new controllers: its registry lists them, everything generated is up to date,
  // and new-fixture writes a third case of one.
  const registered = await succeedIn(copy, process.execPath, ['--import', 'tsx', '--eval', "import('./hooks/controllers.ts').then(({ controllers }) => console.log(JSON.stringify(controllers.map((c) => c.name))))"])
  assert.deepEqual(JSON.parse(registered), [...controllers.map((c) => c.name), ...scaffolded.map(([name]) => name)])
  assert.equal(await succeedIn(copy, 'npm', ['run', '-s', 'generate']), 'every generated file is up to date\n')
  const [[first], [second], [broken]] = scaffolded
  assert.match(await succeedIn(copy, 'npm', ['run', '-s', 'new-fixture', '--', second, 'again', '--after', 'steady-state']), new RegExp(`^wrote test/fixtures/${second}/again\\.json, and its answer \\(200\\)`))
  for (const [name, plural] of scaffolded) {
    const crd = parse(readFileSync(join(copy, 'manifests', 'crds', `${name}.yaml`), 'utf8'))
    const controller = parse(readFileSync(join(copy, 'manifests', 'controllers', `${name}.yaml`), 'utf8'))
    assert.ok(crd.spec.names.plural.endsWith(plural), crd.spec.names.plural)
    assert.equal(controller.spec.parentResource.resource, crd.spec.names.plural)
  }
  const testsAfter = contents(join(copy, 'test'))
  for (const [path, content] of testsBefore) assert.equal(testsAfter.get(path), content, `test/${path} was changed`)

  // What a newcomer runs next: the whole suite, which must pass with no test edited.
  const suite = await runIn(copy, 'npm', ['test'])
  t.diagnostic(`from the scaffold to the end of npm test in the copy (exit code ${suite.status}): ${((Date.now() - scaffoldedAt) / 1000).toFixed(0)} s`)
  assert.equal(suite.status, 0, `npm test failed in the copy:\n${suite.stdout.slice(suite.stdout.indexOf('\u2716 failing tests:')).slice(0, 20_000)}\n${suite.stderr.slice(-5_000)}`)

  // The step the writing-a-controller page asks for after a change of the child kinds, forgotten for the last one.
  const index = join(copy, 'hooks', broken, 'index.ts')
  writeFileSync(index, readFileSync(index, 'utf8').replace("updateStrategy: 'InPlace' }]", "updateStrategy: 'InPlace' }, { apiVersion: 'v1', kind: 'Secret', resource: 'secrets', updateStrategy: 'InPlace' }]"))

  const t0 = Date.now()
  const checked = await runIn(copy, 'npm', ['run', '-s', 'check', '--', first, second, broken])
  t.diagnostic(`npm run check of three controllers in the copy: ${((Date.now() - t0) / 1000).toFixed(0)} s`)
  assert.equal(checked.status, 1, checked.stdout)
  assert.match(checked.stdout, /^passed: types \(/m)
  assert.match(checked.stdout, /^passed: lint \(/m)
  const failed = [...checked.stdout.matchAll(/^\u2716 (.+) \(\d[\d.]*m?s\)$/gm)].map((match) => match[1] as string)
  assert.deepEqual([...new Set(failed)].sort(), [
    `${broken}: its CRD, its Metacontroller controller and its example are what \`npm run generate\` writes from hooks/${broken}/`,
    `${broken}: its fixtures observe a child of every kind it owns, so that the tests (hostile values among them) reach each`
  ], checked.stdout)
  assert.match(checked.stdout, new RegExp(`manifests/controllers/${broken}\\.yaml is stale: run \`npm run generate\``))
  assert.match(checked.stdout, new RegExp(`no fixture of ${broken} observes a v1 Secret: add one`))
  assert.match(checked.stderr, /^tests failed, above\. A manifest that is stale: npm run generate\./)
})
