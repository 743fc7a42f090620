import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { inTurn } from '../../hooks/http/connection-turns.js'

/** hooks/http/connection-turns.ts over real sockets: pipelined requests are handed over one at a time, in order. */

/** A server whose handler records what it is handed and answers each request when `answer` is called for it. */
async function recordingServer (t: TestContext): Promise<{ port: number, handed: string[], answer: (path: string) => void }> {
  const handed: string[] = []
  const open = new Map<string, ServerResponse>()
  const server = createServer(inTurn((request: IncomingMessage, response: ServerResponse) => {
    handed.push(request.url ?? '')
    open.set(request.url ?? '', response)
  }))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { server.closeAllConnections(); server.close() })
  return {
    port: (server.address() as AddressInfo).port,
    handed,
    answer: (path) => { open.get(path)?.end(path) }
  }
}

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`

async function until (done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > 5000) throw new Error('not within 5 s')
    await sleep(10)
  }
}

test('a connection\'s pipelined requests are handed over one at a time, each once the previous answer is sent', async (t) => {
  const { port, handed, answer } = await recordingServer(t)
  const received: string[] = []
  const socket = connect(port, '127.0.0.1', () => { socket.write(['/a', '/b', '/c'].map(get).join('')) })
  socket.on('data', (data) => { received.push(...data.toString().split('\r\n\r\n').slice(1).filter((part) => part.startsWith('/')).map((part) => part.slice(0, 2))) })
  t.after(() => socket.destroy())
  await until(() => handed.length === 1)
  await sleep(50)
  assert.deepEqual(handed, ['/a'])
  answer('/a')
  await until(() => handed.length === 2)
  assert.deepEqual(handed, ['/a', '/b'])
  answer('/b')
  await until(() => handed.length === 3)
  answer('/c')
  await until(() => received.length === 3)
  assert.deepEqual(received, ['/a', '/b', '/c'])
})

test('other connections are not held up by one whose answer is pending', async (t) => {
  const { port, handed, answer } = await recordingServer(t)
  const first = connect(port, '127.0.0.1', () => { first.write(get('/held') + get('/behind')) })
  t.after(() => first.destroy())
  await until(() => handed.includes('/held'))
  const second = connect(port, '127.0.0.1', () => { second.write(get('/other')) })
  t.after(() => second.destroy())
  await until(() => handed.includes('/other'))
  answer('/other')
  assert.deepEqual(handed, ['/held', '/other'])
  answer('/held')
  await until(() => handed.includes('/behind'))
})

test('the requests waiting behind an answer are dropped, never handed over, when the connection closes', async (t) => {
  const { port, handed } = await recordingServer(t)
  const socket = connect(port, '127.0.0.1', () => { socket.write(get('/first') + get('/second') + get('/third')) })
  await until(() => handed.length === 1)
  socket.destroy()
  await sleep(100)
  assert.deepEqual(handed, ['/first'])
})
