import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
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

test('after `npm run new-controller` for two controllers, `npm test` passes in that copy, with no test edited', { timeout: 1_800_000 }, async (t) => {
  if (process.env[IN_COPY] === '1') {
    t.skip('this is the run of `npm test` in the copy this test made')
    return
  }
  const copy = await repositoryCopy(t)
  const testsBefore = contents(join(copy, 'test'))

  succeedIn(copy, 'npm', ['run', 'new-controller', '--', 'config-copy'])
  succeedIn(copy, 'npm', ['run', 'new-controller', '--', 'policy'])

  const registered = succeedIn(copy, process.execPath, ['--import', 'tsx', '--eval', "import('./hooks/controllers.ts').then(({ controllers }) => console.log(JSON.stringify(controllers.map((c) => c.name))))"])
  assert.deepEqual(JSON.parse(registered), [...controllers.map((c) => c.name), 'config-copy', 'policy'])
  for (const [name, plural] of [['config-copy', 'configcopies'], ['policy', 'policies']]) {
    const crd = parse(readFileSync(join(copy, 'manifests', 'crds', `${name}.yaml`), 'utf8'))
    const controller = parse(readFileSync(join(copy, 'manifests', 'controllers', `${name}.yaml`), 'utf8'))
    assert.equal(crd.spec.names.plural, plural)
    assert.equal(controller.spec.parentResource.resource, plural)
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
    ['Config_Copy', /^"Config_Copy" cannot name a controller: use at most 40 lowercase letters, digits and '-'/]
  ]
  for (const [name, message] of refusals) {
    const result = runIn(copy, 'npm', ['run', '-s', 'new-controller', '--', name])
    assert.equal(result.status, 1, name)
    assert.match(result.stderr.trim(), message)
  }
})
