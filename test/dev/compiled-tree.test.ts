import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { compileTree } from '../../dev/compiled-tree.js'

test('a compiled module runs without a loader, keeps its source folder as import.meta.dirname, and its tree goes with remove()', async (t) => {
  const repository = await mkdtemp(join(tmpdir(), 'compiled-tree-'))
  t.after(async () => { await rm(repository, { recursive: true, force: true }) })
  await writeFile(join(repository, 'package.json'), '{ "type": "module" }')
  await mkdir(join(repository, 'dev'))
  await writeFile(join(repository, 'dev', 'where.ts'), 'export const where: string = import.meta.dirname\n')
  await writeFile(join(repository, 'probe.test.ts'), 'import { where } from \'./dev/where.js\'\nconst typed: string = where\nconsole.log(typed)\n')
  // The tree a run left when it was killed: no process has this pid.
  const stale = join(repository, '.cache', 'compiled', '2147483646')
  await mkdir(stale, { recursive: true })

  const tree = await compileTree(repository, ['probe.test.ts'])
  assert.equal(existsSync(stale), false, 'the tree of a process that ended is removed')
  assert.equal(tree.compiled('probe.test.ts'), join(tree.root, 'probe.test.js'))
  assert.equal(execFileSync(process.execPath, [tree.compiled('probe.test.ts')], { encoding: 'utf8' }).trim(), join(repository, 'dev'))
  tree.remove()
  assert.equal(existsSync(tree.root), false)
})

test('a syntax error is one line naming its place, and leaves no tree', async (t) => {
  const repository = await mkdtemp(join(tmpdir(), 'compiled-tree-'))
  t.after(async () => { await rm(repository, { recursive: true, force: true }) })
  await mkdir(join(repository, 'test'))
  await writeFile(join(repository, 'test', 'broken.test.ts'), 'const unfinished: number = (\n')
  await assert.rejects(compileTree(repository), /^Error: test\/broken\.test\.ts:2:1: Unexpected end of file$/)
  assert.deepEqual(await readdir(join(repository, '.cache', 'compiled')), [])
})
