import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import Fastify from 'fastify'
import { BearerTokens, fingerprint, RELOAD_INTERVAL_MS } from '../../hooks/http/bearer-token.js'
import { ConfigError, loadConfig } from '../../hooks/runtime/config.js'
import { build } from '../helpers/app.js'
import { testDatabaseUrl } from '../helpers/database-url.js'
import { fixture, fixturePath } from '../helpers/fixtures.js'
import { SecretVolume } from '../helpers/secret-volume.js'
import { startServer } from '../../dev/server-process.js'

const OLD = 'old-7f3c9a1e5b2d4f6a8c0e2b4d6f8a0c1e'
const NEW = 'new-2b4d6f8a0c1e3f5a7c9e1b3d5f7a9c0e'

async function folder (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hooks-token-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

test('HOOKS_BEARER_TOKEN_FILE: one token per line, blank lines ignored', async (t) => {
  const file = join(await folder(t), 'tokens')
  await writeFile(file, `${OLD}\n\n  ${NEW}  \n`)
  assert.deepEqual(loadConfig({ HOOKS_BEARER_TOKEN_FILE: file }).bearerTokens, { variable: 'HOOKS_BEARER_TOKEN_FILE', file, tokens: [OLD, NEW] })
  assert.deepEqual(loadConfig({ HOOKS_BEARER_TOKEN: OLD }).bearerTokens, { variable: 'HOOKS_BEARER_TOKEN', file: undefined, tokens: [OLD] })
})

test('a token file that is missing or empty, both variables set, or the published example token stop start-up with what to do', async (t) => {
  const dir = await folder(t)
  await writeFile(join(dir, 'empty'), '\n \n')
  await writeFile(join(dir, 'example'), `${NEW}\nreplace-me-with-a-long-random-token\n`)
  const refused: Array<[Record<string, string>, RegExp]> = [
    [{ HOOKS_BEARER_TOKEN_FILE: join(dir, 'missing') }, /^HOOKS_BEARER_TOKEN_FILE=.*missing: cannot read it \(ENOENT\)$/],
    [{ HOOKS_BEARER_TOKEN_FILE: join(dir, 'empty') }, /^HOOKS_BEARER_TOKEN_FILE .*empty holds no token: write one per line, such as the output of `openssl rand -hex 32`$/],
    [{ HOOKS_BEARER_TOKEN_FILE: join(dir, 'example') }, /^HOOKS_BEARER_TOKEN_FILE .*example holds the example token of an earlier manifests\/overlays\/bearer-token, which is public: generate one/],
    [{ HOOKS_BEARER_TOKEN: 'replace-me-with-a-long-random-token' }, /^HOOKS_BEARER_TOKEN holds the example token/],
    [{ HOOKS_BEARER_TOKEN: OLD, HOOKS_BEARER_TOKEN_FILE: join(dir, 'empty') }, /^HOOKS_BEARER_TOKEN and HOOKS_BEARER_TOKEN_FILE: set one of them, not both$/]
  ]
  for (const [env, message] of refused) {
    assert.throws(() => loadConfig(env), (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.equal(error.problems.length, 1, error.message)
      assert.match(error.problems[0] ?? '', message)
      return true
    }, JSON.stringify(env))
  }
})

test('every token of the file is accepted; a refusal names the file, never a token', async (t) => {
  const file = join(await folder(t), 'tokens')
  await writeFile(file, `${OLD}\n${NEW}\n`)
  const { app } = await build(t, { env: { HOOKS_BEARER_TOKEN_FILE: file } })
  const call = async (authorization?: string): Promise<{ statusCode: number, body: string }> =>
    await app.inject({ method: 'POST', url: '/podset/sync', payload: fixture('podset', 'first-sync'), headers: authorization === undefined ? {} : { authorization } })
  assert.equal((await call(`Bearer ${OLD}`)).statusCode, 200)
  assert.equal((await call(`Bearer ${NEW}`)).statusCode, 200)
  for (const wrong of [undefined, `Bearer ${OLD}${NEW}`, `Bearer ${OLD}\n${NEW}`, OLD, `Bearer ${NEW.slice(0, -1)}`]) {
    const refused = await call(wrong)
    assert.equal(refused.statusCode, 401, JSON.stringify(wrong))
    assert.equal(JSON.parse(refused.body).message, `missing or wrong bearer token: send Authorization: Bearer <a token listed in HOOKS_BEARER_TOKEN_FILE (${file})>`)
  }
})

test('reload: a changed file replaces the tokens; an unreadable or empty one, or the example, keeps them and is logged once', async (t) => {
  const volume = new SecretVolume(await folder(t), 'tokens')
  await volume.write(`${OLD}\n`)
  const lines: Array<{ level: number, msg: string }> = []
  const { log } = Fastify({ logger: { level: 'info', stream: { write: (line: string) => { lines.push(JSON.parse(line)) } } } })
  const tokens = new BearerTokens({ variable: 'HOOKS_BEARER_TOKEN_FILE', file: volume.file, tokens: [OLD] }, log)
  assert.equal(lines.at(-1)?.msg, `hooks need a bearer token: 1 accepted from HOOKS_BEARER_TOKEN_FILE ${volume.file} (fingerprints ${fingerprint(OLD)})`)

  await volume.write(`${OLD}\n${NEW}\n`)
  await tokens.reload()
  assert.ok(tokens.accepts(`Bearer ${OLD}`) && tokens.accepts(`Bearer ${NEW}`))
  assert.equal(lines.at(-1)?.msg, `bearer tokens reloaded: 2 accepted from HOOKS_BEARER_TOKEN_FILE ${volume.file} (fingerprints ${fingerprint(OLD)}, ${fingerprint(NEW)})`)
  const logged = lines.length
  await tokens.reload()
  assert.equal(lines.length, logged, 'an unchanged file is not logged again')

  for (const broken of ['', 'replace-me-with-a-long-random-token\n']) {
    await volume.write(broken)
    await tokens.reload()
    await tokens.reload()
    assert.ok(tokens.accepts(`Bearer ${OLD}`) && tokens.accepts(`Bearer ${NEW}`), JSON.stringify(broken))
  }
  await rm(volume.dir, { recursive: true })
  await tokens.reload()
  await tokens.reload()
  assert.ok(tokens.accepts(`Bearer ${NEW}`))
  const errors = lines.slice(logged).filter((line) => line.level === 50).map((line) => line.msg)
  assert.equal(errors.length, 3, errors.join('\n'))
  assert.match(errors[0] ?? '', /holds no token.*; the 2 token\(s\) read before are still accepted$/)
  assert.match(errors[1] ?? '', /holds the example token/)
  assert.match(errors[2] ?? '', /^cannot read HOOKS_BEARER_TOKEN_FILE .*: ENOENT; the 2 token\(s\) read before are still accepted$/)
  for (const line of lines) assert.ok(!line.msg.includes(OLD) && !line.msg.includes(NEW), line.msg)
})

test('rotation in a running server: old and new accepted during the overlap, then the old refused, no restart', { timeout: 60_000 }, async (t) => {
  const volume = new SecretVolume(await folder(t), 'tokens')
  await volume.write(`${OLD}\n`)
  const server = await startServer({ env: { DATABASE_URL: testDatabaseUrl(), HOOKS_BEARER_TOKEN_FILE: volume.file } })
  t.after(async () => { await server.stop() })
  const body = await readFile(fixturePath('podset', 'first-sync'))
  const status = async (token: string): Promise<number> =>
    (await fetch(`${server.url}/podset/sync`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body })).status

  assert.deepEqual([await status(OLD), await status(NEW)], [200, 401])

  await volume.write(`${OLD}\n${NEW}\n`)
  await server.logged(`2 accepted from HOOKS_BEARER_TOKEN_FILE ${volume.file} (fingerprints ${fingerprint(OLD)}, ${fingerprint(NEW)})`, 3 * RELOAD_INTERVAL_MS)
  assert.deepEqual([await status(OLD), await status(NEW)], [200, 200])

  await volume.write(`${NEW}\n`)
  await server.logged(`bearer tokens reloaded: 1 accepted from HOOKS_BEARER_TOKEN_FILE ${volume.file} (fingerprints ${fingerprint(NEW)})`, 3 * RELOAD_INTERVAL_MS)
  assert.deepEqual([await status(OLD), await status(NEW)], [401, 200])

  assert.ok(server.running())
  assert.equal(server.output().split('hook server ready').length, 2, 'one start, no restart')
  assert.equal(await server.stop(), 0)
  assert.ok(!server.output().includes(OLD) && !server.output().includes(NEW), 'the log never holds a token')
})
