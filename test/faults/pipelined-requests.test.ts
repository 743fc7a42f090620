import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { AMPLIFYING_SYNC, DEPLOYMENT, podSetSync, withSmallCalls } from './small-calls.js'

/**
 * Clients that pipeline hook requests on their connections, reading their answers or never reading them, against a
 * hook server started as the Deployment starts it: the process stays up and under the Deployment's memory limit, a
 * client that reads gets every answer, in order, and another caller's small calls meanwhile are answered within 1 s.
 */

function httpRequest (body: string): string {
  return `POST /podset/sync HTTP/1.1\r\nHost: hooks\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
}

interface Answer { status: number, children: number }

/**
 * The answers on one connection, read as they come: each one's status and, from its body, how many children it has.
 * Resolves when the server closes the connection or `expected` answers have come.
 */
async function readAnswers (port: number, requests: string, expected: number): Promise<Answer[]> {
  return await new Promise((resolve, reject) => {
    const answers: Answer[] = []
    let buffered = Buffer.alloc(0)
    const socket = connect(port, '127.0.0.1', () => { socket.write(requests) })
    socket.on('data', (data) => {
      buffered = Buffer.concat([buffered, data])
      for (;;) {
        const headEnd = buffered.indexOf('\r\n\r\n')
        if (headEnd === -1) return
        const head = buffered.subarray(0, headEnd).toString('latin1')
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1])
        if (buffered.length < headEnd + 4 + length) return
        const body = JSON.parse(buffered.subarray(headEnd + 4, headEnd + 4 + length).toString()) as { children?: unknown[] }
        answers.push({ status: Number(head.split(' ')[1]), children: body.children?.length ?? -1 })
        buffered = buffered.subarray(headEnd + 4 + length)
        if (answers.length === expected) socket.destroy()
      }
    })
    socket.on('close', () => { resolve(answers) })
    socket.on('error', reject)
  })
}

/** Connections that send their requests and never read: closed after `holdMs`. */
async function neverRead (port: number, requests: string, connections: number, holdMs: number): Promise<void> {
  await Promise.all(Array.from({ length: connections }, async () => {
    const socket = connect(port, '127.0.0.1', () => { socket.write(requests) })
    socket.pause()
    socket.on('error', () => {})
    await sleep(holdMs)
    socket.destroy()
  }))
}

const amplifying = httpRequest(AMPLIFYING_SYNC)

for (const [connections, depth] of [[1, 200], [8, 50], [64, 10], [64, 200]] as const) {
  test(`${connections} connection(s) each pipelining ${depth} 2,000-pod syncs and never reading: ${DEPLOYMENT}, small calls answered`, async (t) => {
    await withSmallCalls(t, async (server) => { await neverRead(server.port, amplifying.repeat(depth), connections, 8000) })
  })
}

test('a connection pipelining 200 syncs, each of another size, gets every answer in order', async (t) => {
  await withSmallCalls(t, async (server) => {
    const requests = Array.from({ length: 200 }, (_, index) => httpRequest(podSetSync(`in-order-${index}`, index + 1))).join('')
    const answers = await readAnswers(server.port, requests, 200)
    assert.deepEqual(answers, Array.from({ length: 200 }, (_, index) => ({ status: 200, children: index + 1 })))
  })
})

test(`8 connections each pipelining 20 2,000-pod syncs and reading: all 160 answered in full, ${DEPLOYMENT}`, async (t) => {
  await withSmallCalls(t, async (server) => {
    const answers = await Promise.all(Array.from({ length: 8 }, async () => await readAnswers(server.port, amplifying.repeat(20), 20)))
    for (const connection of answers) assert.deepEqual(connection, Array.from({ length: 20 }, () => ({ status: 200, children: 2000 })))
  })
})
