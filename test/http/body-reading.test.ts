import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { test } from 'node:test'
import { setImmediate } from 'node:timers/promises'
import { receiveBody, type BodyGate } from '../../hooks/http/body-reading.js'
import { bodyLimits } from '../../hooks/http/request-body.js'
import { podSet } from '../../hooks/podset/index.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'

/** hooks/http/body-reading.ts: what is read as a hook request. */

test('a hook request is JSON in UTF-8: another charset, or parameters fastify would let through, get 415', async (t) => {
  const { app } = await build(t, { databaseUrl: false, controllers: [podSet] })
  const payload = JSON.stringify(fixture('podset', 'first-sync'))
  for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset="UTF-8"']) {
    const response = await app.inject({ method: 'POST', url: '/podset/sync', payload, headers: { 'content-type': type } })
    assert.equal(response.statusCode, 200, type)
  }
  for (const type of ['application/json; charset=utf-16', 'application/json; version=2']) {
    const response = await app.inject({ method: 'POST', url: '/podset/sync', payload, headers: { 'content-type': type } })
    assert.equal(response.statusCode, 415, type)
    assert.equal(response.json().message, `the body must be a Metacontroller hook request sent as JSON, with the header Content-Type: application/json (this one had Content-Type: ${type})`)
  }
})

/**
 * A gate that records what it charges; by default it lets a body be read at once and charges every chunk. Without
 * room to `open` or to `charge`, the body waits for `go` to be called.
 */
function recordingGate (room: { open: boolean, charge: boolean } = { open: true, charge: true }): BodyGate & { taken: number[], arrivals: number, go: () => void } {
  let reader: { go: () => void } | undefined
  const gate = {
    taken: [] as number[],
    arrivals: 0,
    go: () => { reader?.go() },
    open: (given: { go: () => void }) => {
      reader = given
      return room.open
    },
    take: (bytes: number) => {
      gate.taken.push(bytes)
      return room.charge
    },
    arrived: () => { gate.arrivals++ },
    stopped: (error: Error) => { throw error }
  }
  return gate
}

/** A stream that holds `body` whole in its buffer, as a request's does once the body has come with its headers. */
function bufferedStream (body: Buffer): Readable {
  const stream = new Readable({ read () {} })
  stream.push(body)
  stream.push(null)
  return stream
}

test('a body whole in the stream\'s buffer is taken at once, as one chunk, without starting the stream\'s flow', async () => {
  const body = Buffer.from(JSON.stringify(fixture('podset', 'first-sync')))
  const stream = bufferedStream(body)
  const gate = recordingGate()
  const received = await receiveBody(stream, bodyLimits(1024 * 1024), body.length, gate)
  assert.deepEqual(Buffer.concat(received.chunks), body)
  assert.equal(received.length, body.length)
  assert.deepEqual(gate.taken, [body.length])
  assert.equal(gate.arrivals, 1)
  assert.equal(stream.readableFlowing, null)
})

test('a body whole in the stream\'s buffer that must wait for room is taken once its call is let go on', async () => {
  const body = Buffer.from(JSON.stringify(fixture('podset', 'first-sync')))
  // No room to open: it waits unread. Room to open but not to charge the body: it waits, charged once let go on.
  for (const room of [{ open: false, charge: true }, { open: true, charge: false }]) {
    const gate = recordingGate(room)
    let settled = false
    const received = receiveBody(bufferedStream(body), bodyLimits(1024 * 1024), body.length, gate).finally(() => { settled = true })
    await setImmediate()
    assert.equal(settled, false, JSON.stringify(room))
    gate.go()
    assert.deepEqual(Buffer.concat((await received).chunks), body)
    assert.deepEqual(gate.taken, [body.length])
    assert.equal(gate.arrivals, 1)
  }
})
