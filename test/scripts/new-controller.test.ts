import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { parse } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { repositoryCopy, runIn, succeedIn } from '../helpers/repository-copy.js'

/** Set in the `npm test` this test runs in its copy, where this test has nothing more to prove. */
const IN_COPY = 'NEW_CONTROLLER_TEST_COPY'

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

test('after `npm run new-controller` for two controllers, `npm test` passes in that copy, with no test edited', { timeout: 1_800_000 }, async (t) => {
  if (process.env[IN_COPY] === '1') {
    t.skip('this is the run of `npm test` in the copy this test made')
    return
  }
  const copy = await repositoryCopy(t)
  const testsBefore = contents(join(copy, 'test'))

  const scaffolded = [freeName(copy, ['config-copy', 'file-copy', 'data-copy'], 'copies'), freeName(copy, ['policy', 'access-policy', 'egress-policy'], 'policies')]
  for (const [name] of scaffolded) succeedIn(copy, 'npm', ['run', 'new-controller', '--', name])

  const registered = succeedIn(copy, process.execPath, ['--import', 'tsx', '--eval', "import('./hooks/controllers.ts').then(({ controllers }) => console.log(JSON.stringify(controllers.map((c) => c.name))))"])
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
  succeedIn(copy, 'npm', ['test'], { env: { [IN_COPY]: '1' } })
  t.diagnostic(`npm test in the copy with ${controllers.length + 2} controllers: ${((Date.now() - t0) / 1000).toFixed(0)} s`)
})

test('a name that is taken, or that cannot name a controller, is refused with the reason', async (t) => {
  const copy = await repositoryCopy(t)
  const refusals: Array<[string, RegExp]> = [
    ['podset', /^hooks\/podset\/ exists already: choose another name$/],
    ['Config_Copy', /^"Config_Copy" cannot name a controller: use at most 40 lowercase letters, digits and '-'/],
    ['class', /^"class" cannot name a controller: class is a reserved word of TypeScript, and the scaffold names the controller's variable with it$/]
  ]
  for (const [name, message] of refusals) {
    const result = runIn(copy, 'npm', ['run', '-s', 'new-controller', '--', name])
    assert.equal(result.status, 1, name)
    assert.match(result.stderr.trim(), message)
  }
})
