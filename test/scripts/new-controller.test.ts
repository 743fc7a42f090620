import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { controllers } from '../../hooks/controllers.js'
import { CommandError } from '../../dev/command.js'
import { newController } from '../../dev/new-controller.js'
import { repositoryCopy, runIn, succeedIn } from '../helpers/repository-copy.js'

/**
 * `npm run new-controller` (dev/new-controller.ts): its refusals, in-process, and the commands' refusal of a resource
 * it scaffolded and its author then named wrongly, in a copy. What it writes, and that the controllers it scaffolds
 * pass every test with none edited, is test/scaffold/, run as a command in a copy of the repository.
 */

const root = join(import.meta.dirname, '..', '..')

test('a name that is taken, or that cannot name a controller, is refused with the reason, and nothing is written', async () => {
  const refusals: Array<[string[], RegExp]> = [
    [['podset'], /^hooks\/podset\/ exists already: choose another name$/],
    [['Config_Copy'], /^"Config_Copy" cannot name a controller: use at most 40 lowercase letters, digits and '-'/],
    [['class'], /^"class" cannot name a controller: class is a reserved word of TypeScript, and the scaffold names the controller's variable with it$/],
    [['rc'], /^"rc" cannot name a controller: its resource's singular "rc" is the short name of ReplicationController, a built-in Kubernetes resource, and kubectl would take one for the other: choose another name$/],
    [['replication-controller'], /^"replication-controller" cannot name a controller: its resource's singular "replicationcontroller" is the singular of ReplicationController, a built-in/],
    [['ingress'], /^"ingress" cannot name a controller: its resource's singular "ingress" is the singular of Ingress, a built-in/],
    [[], /^usage: npm run new-controller -- <name>/],
    [['a', 'b'], /^unexpected argument "b": usage: /]
  ]
  for (const [args, message] of refusals) {
    let printed = ''
    await assert.rejects(newController(args, controllers, root, { cwd: root, stdin: async () => '', stdout: (text) => { printed += text } }),
      (error: Error) => error instanceof CommandError && message.test(error.message), args.join(' '))
    assert.equal(printed, '', args.join(' '))
  }
})

test('the scaffold writes as many files as docs/writing-a-controller.md counts; a resource it scaffolded, given a name of a built-in resource, is refused by the commands in one line naming its owner', async (t) => {
  const copy = await repositoryCopy(t)
  await succeedIn(copy, 'npm', ['run', '-s', 'new-controller', '--', 'redis-cache'])
  // The copy's files are staged: what the scaffold changed or added differs from the index.
  const written = ['diff --name-only', 'ls-files --others --exclude-standard'].flatMap((command) => execFileSync('git', command.split(' '), { cwd: copy, encoding: 'utf8' }).split('\n')).filter((path) => path !== '')
  const page = readFileSync(join(root, 'docs', 'writing-a-controller.md'), 'utf8')
  assert.equal(Number(/The scaffold writes (\d+) files/.exec(page)?.[1]), written.length, written.join('\n'))
  // Step 4 adds one case, and its answer.
  const touched = /touched (\d+) files: 2 edited by hand \(`resource\.ts`, `sync\.ts`\), and\s+(\d+) written by the commands above/.exec(page)
  assert.deepEqual([Number(touched?.[1]), Number(touched?.[2])], [written.length + 2, written.length], 'What you touched')
  const resource = join(copy, 'hooks', 'redis-cache', 'resource.ts')
  writeFileSync(resource, readFileSync(resource, 'utf8').replace("kind: 'RedisCache',", "kind: 'RedisCache',\n  shortNames: ['rc'],"))
  const line = 'RedisCache: short name "rc" is the short name of ReplicationController, a built-in Kubernetes resource, and kubectl would take one for the other: choose another\n'
  for (const command of [['generate'], ['check', '--', 'redis-cache'], ['new-fixture', '--', 'redis-cache', 'again']]) {
    const run = await runIn(copy, 'npm', ['run', '-s', ...command])
    assert.deepEqual([run.status, run.stderr], [1, line], command.join(' '))
  }
})
