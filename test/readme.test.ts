import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { test } from 'node:test'
import { emptyDatabase } from './helpers/app.js'
import { startServer } from '../dev/server-process.js'

/**
 * The README's "A first answer", as a reader uses it: its shell block, taken from README.md (so that this test follows
 * the README as it changes), pasted into a shell at the root of the clone, against `npm start`'s server.
 */

const root = join(import.meta.dirname, '..')

function firstAnswer (): { block: string, shown: string } {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const section = /^## A first answer\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1]
  assert.ok(section !== undefined, 'README.md has a section "## A first answer"')
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section)?.[1]
  const shown = /^```text\n([\s\S]*?)^```$/m.exec(section)?.[1]
  assert.ok(block !== undefined && shown !== undefined, 'the section has a sh block, and a text block with what it prints')
  return { block, shown }
}

/** What the block prints, stdout and stderr together, when pasted into bash with `PORT` set. */
async function paste (block: string, port: number): Promise<string> {
  const shell = spawn('bash', [], { cwd: root, env: { ...process.env, PORT: String(port) }, stdio: ['pipe', 'pipe', 'pipe'] })
  let printed = ''
  shell.stdout.on('data', (chunk: Buffer) => { printed += chunk.toString() })
  shell.stderr.on('data', (chunk: Buffer) => { printed += chunk.toString() })
  shell.stdin.end(block)
  await new Promise((resolve) => shell.once('close', resolve))
  return printed
}

test('the README\'s first answer, pasted twice against a server on another port than 8080, prints what the README shows both times', async (t) => {
  const { block, shown } = firstAnswer()
  // A first `npm start`'s database: empty, schema public.
  const server = await startServer({ env: { DATABASE_URL: await emptyDatabase(t, 'readme') } })
  t.after(async () => { await server.stop() })
  assert.notEqual(server.port, 8080)
  assert.equal(await paste(block, server.port), shown, 'first paste')
  assert.equal(await paste(block, server.port), shown, 'second paste')
})

test('the README\'s first answer says so when no hook server holds the port: nothing there, or another server', async (t) => {
  const { block } = firstAnswer()
  const other = createServer((_request, response) => { response.end('hello from another server\n') })
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  t.after(() => { other.close() })
  const { port } = other.address() as { port: number }
  // Port 1 (TCP multiplexing, long unused): only a privileged process could listen there.
  for (const [what, on] of [['another server', port], ['nothing', 1]] as const) {
    const [first] = (await paste(block, on)).split('\n')
    assert.equal(first, `no metacontroller-hooks server answers on localhost:${on}: start one with npm start (if another server holds the port, give npm start and this block another PORT)`, what)
  }
})
