import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pulsarConsumer } from '../../hooks/pulsar-consumer/index.js'
import { build } from '../helpers/app.js'
import { fixture } from '../helpers/fixtures.js'
import { assertGolden } from '../helpers/golden.js'
import { invalidSpecReady, lastAppliedChildren } from '../helpers/invalid-spec.js'

type Json = Record<string, any>

const cases: Array<{ title: string, edit: (spec: Json) => void, field: string }> = [
  { title: 'a missing topic', edit: (spec) => { delete spec.topic }, field: 'spec.topic' },
  { title: 'an empty subscription name', edit: (spec) => { spec.subscriptionName = '' }, field: 'spec.subscriptionName' },
  { title: 'negative replicas', edit: (spec) => { spec.replicas = -1 }, field: 'spec.replicas' },
  { title: 'fractional replicas', edit: (spec) => { spec.replicas = 1.5 }, field: 'spec.replicas' },
  { title: 'replicas beyond int32', edit: (spec) => { spec.replicas = 2 ** 31 }, field: 'spec.replicas' },
  { title: 'an http:// server address', edit: (spec) => { spec.serverAddress = 'http://x' }, field: 'spec.serverAddress' },
  { title: 'a server address with a space', edit: (spec) => { spec.serverAddress = 'pulsar://broker 6650' }, field: 'spec.serverAddress' },
  { title: 'an empty image', edit: (spec) => { spec.image = '' }, field: 'spec.image' }
]

for (const { title, edit, field } of cases) {
  test(`${title} gets Ready=False InvalidSpec naming ${field}, and the Deployment kept as it is`, async (t) => {
    const { app } = await build(t, { databaseUrl: false, controllers: [pulsarConsumer] })
    const request = fixture('pulsar-consumer', 'sync-steady')
    edit(request.parent.spec)
    const response = await app.inject({ method: 'POST', url: '/pulsar-consumer/sync', payload: request })
    const body = response.json()
    const ready = invalidSpecReady(response.statusCode, body, title)
    assert.match(ready.message, /^PulsarConsumer spec cannot be used: /)
    assert.ok(ready.message.includes(`${field}:`), ready.message)
    assert.deepEqual(body.children, lastAppliedChildren(request))
  })
}

test('the invalid-spec fixture names every bad field at once', async (t) => {
  const { app } = await build(t, { databaseUrl: false, controllers: [pulsarConsumer] })
  const response = await app.inject({ method: 'POST', url: '/pulsar-consumer/sync', payload: fixture('pulsar-consumer', 'sync-invalid-spec') })
  const body = response.json()
  const ready = invalidSpecReady(response.statusCode, body)
  for (const field of ['spec.topic', 'spec.replicas', 'spec.serverAddress']) assert.ok(ready.message.includes(field), ready.message)
  assertGolden(body, 'pulsar-consumer', 'sync-invalid-spec')
})
