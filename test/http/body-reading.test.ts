import assert from 'node:assert/strict'
import { test } from 'node:test'
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
