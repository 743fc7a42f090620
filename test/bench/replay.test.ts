import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { text } from 'node:stream/consumers'
import { test } from 'node:test'
import pg from 'pg'
import { callKinds, expectedWriterRows, readRecording, type RecordedCall } from '../../dev/hook-recording.js'
import { answerAsExpected, BURST_FILE, callsOfPass, replay, writerRowsFound, type ReplayCall } from '../../bench/replay.js'
import { testDatabaseUrl } from '../helpers/database-url.js'

/** The replay of a recorded burst (bench/replay.ts): its passes, its order, its checks, the rows it reads back. */

const UID = '1a2b3c4d-0000-4000-8000-000000000001'

function recorded (name: string, path = '/postgres-writer/sync', answer = '{}'): RecordedCall {
  const body = JSON.stringify({
    object: { kind: 'PostgresWriter', metadata: { namespace: 'burst', name, uid: UID }, spec: { table: 'students', name: 'alex', age: 23, country: 'canada' }, status: { id: `burst/${name}`, conditions: [{ message: `row "burst/${name}" written` }] } }
  })
  return { sentAt: 0, answeredAt: 1, method: 'POST', path, headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'user-agent': 'Go-http-client/1.1' }, body, status: 200, answer }
}

test('each pass is about objects of its own: the namespace and every uid renamed the same way wherever they appear', () => {
  const [call] = [recorded('a')]
  const [asRecorded] = callsOfPass([call as RecordedCall], 0)
  assert.equal(asRecorded?.body, call?.body)
  const [renamed] = callsOfPass([call as RecordedCall], 3)
  assert.equal(renamed?.key, 'burst-3/a')
  const { object } = JSON.parse(renamed?.body ?? '') as { object: { metadata: { namespace: string, uid: string }, status: { id: string, conditions: Array<{ message: string }> } } }
  assert.equal(object.metadata.namespace, 'burst-3')
  assert.equal(object.status.id, 'burst-3/a')
  assert.equal(object.status.conditions[0]?.message, 'row "burst-3/a" written')
  assert.notEqual(object.metadata.uid, UID)
  assert.match(object.metadata.uid, /^[0-9a-f]{8}-0000-4000-8000-000000000001$/)
  assert.notEqual(callsOfPass([call as RecordedCall], 4)[0]?.body.match(/"uid":"([^"]+)"/)?.[1], object.metadata.uid, 'another pass, another uid')
})

test('a replay sends each object\'s calls in their order, one at a time, with at most `concurrency` calls in flight', async (t) => {
  let inFlight = 0
  let most = 0
  const busy = new Set<string>()
  const overlaps: string[] = []
  const arrived: string[] = []
  const server = createServer((request, response) => {
    void text(request).then(async (body) => {
      const { object } = JSON.parse(body) as { object: { metadata: { name: string }, spec: { step: number } } }
      const key = object.metadata.name
      if (busy.has(key)) overlaps.push(key)
      busy.add(key)
      most = Math.max(most, ++inFlight)
      arrived.push(`${key}${object.spec.step}`)
      assert.equal(request.headers['content-length'], String(Buffer.byteLength(body)))
      await new Promise((resolve) => setTimeout(resolve, key === 'slow' ? 30 : 2))
      busy.delete(key)
      inFlight--
      response.writeHead(key === 'refused' ? 422 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: `${key}${object.spec.step}` }))
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.close() })

  const call = (name: string, step: number): ReplayCall => ({
    key: `burst/${name}`,
    path: '/postgres-writer/sync',
    headers: { 'content-type': 'application/json', 'content-length': '1' },
    body: JSON.stringify({ object: { metadata: { name }, spec: { step } } }),
    status: 200,
    answer: '{}'
  })
  const calls = [call('slow', 1), call('slow', 2), ...Array.from({ length: 12 }, (_, index) => call(`quick${index % 4}`, Math.floor(index / 4) + 1)), call('slow', 3), call('refused', 1)]
  const { sample, answers } = await replay(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, 3)
  assert.deepEqual(overlaps, [], 'never two calls of one object at once')
  assert.ok(most <= 3, `at most 3 in flight, saw ${most}`)
  assert.equal(most, 3, 'the others go on while an object waits')
  for (const name of ['slow', 'quick0', 'quick3']) {
    const steps = arrived.filter((one) => one.startsWith(name) && /\d$/.test(one)).map((one) => Number(one.slice(name.length)))
    assert.deepEqual(steps, [...steps].sort((a, b) => a - b), `${name}'s calls in their order`)
  }
  assert.deepEqual(answers.map((answer) => JSON.parse(answer.text) as unknown), calls.map((one) => ({ echoed: `${one.key.slice(6)}${(JSON.parse(one.body) as { object: { spec: { step: number } } }).object.spec.step}` })), 'answers in the calls\' order')
  assert.equal(sample.latenciesMs.length, calls.length)
  assert.equal(sample.unexpectedStatus, 1, 'the 422 where the recording says 200')
  assert.equal(sample.errors, 0)
})

test('this server\'s answer must say what the recorded one said; the naive hook\'s, Ready on a sync and finalized on a finalize', () => {
  const ready = (status: string, reason: string): string => JSON.stringify({ status: { conditions: [{ type: 'Ready', status, reason }] } })
  const [sync] = callsOfPass([recorded('a', '/postgres-writer/sync', ready('True', 'RowWritten'))], 0) as [ReplayCall]
  const [finalize] = callsOfPass([recorded('a', '/postgres-writer/finalize', JSON.stringify({ finalized: true, status: { conditions: [{ type: 'Ready', status: 'False', reason: 'RowDeleted' }] } }))], 0) as [ReplayCall]
  assert.ok(answerAsExpected(sync, { status: 200, text: ready('True', 'RowWritten') }, 'ours'))
  assert.ok(!answerAsExpected(sync, { status: 200, text: ready('True', 'RowUnchanged') }, 'ours'), 'another reason')
  assert.ok(!answerAsExpected(sync, { status: 500, text: '{}' }, 'ours'))
  assert.ok(!answerAsExpected(sync, { status: 200, text: 'not json' }, 'ours'))
  assert.ok(answerAsExpected(sync, { status: 200, text: ready('True', 'Written') }, 'naive hook'), 'the naive hook has reasons of its own')
  assert.ok(!answerAsExpected(sync, { status: 200, text: ready('False', 'RowWritten') }, 'naive hook'))
  assert.ok(answerAsExpected(finalize, { status: 200, text: JSON.stringify({ finalized: true, status: { conditions: [{ type: 'Ready', status: 'False', reason: 'RowDeleted' }] } }) }, 'ours'))
  assert.ok(!answerAsExpected(finalize, { status: 200, text: JSON.stringify({ finalized: false, status: { conditions: [{ type: 'Ready', status: 'False', reason: 'RowDeleted' }] } }) }, 'ours'))
  assert.ok(answerAsExpected(finalize, { status: 200, text: JSON.stringify({ finalized: true }) }, 'naive hook'))
})

test('the rows read back are those of the pass\'s objects, in the tables their specs name, whatever else the tables hold', async (t) => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 })
  const schema = `replay_${randomBytes(4).toString('hex')}`
  t.after(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await pool.end()
  })
  await pool.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".students (id text PRIMARY KEY, name text, age integer, country text)`)
  await pool.query(`INSERT INTO "${schema}".students VALUES ('burst-1/b', 'bo', 30, 'peru'), ('burst-1/a', 'al', 20, 'kenya'), ('burst-2/a', 'other', 1, 'pass')`)
  const calls = callsOfPass([recorded('a'), recorded('b')], 1)
  assert.deepEqual(await writerRowsFound(pool, schema, calls), [
    { table: 'students', id: 'burst-1/a', name: 'al', age: 20, country: 'kenya' },
    { table: 'students', id: 'burst-1/b', name: 'bo', age: 30, country: 'peru' }
  ])
  assert.deepEqual(await writerRowsFound(pool, `${schema}_missing`, calls), [], 'no table, no rows')
})

test('the committed burst is a real Metacontroller\'s, and holds what its header says: every object created, the deleted ones finalized', async () => {
  const { header, calls } = await readRecording(BURST_FILE)
  assert.match(header.metacontroller, /^v\d+\.\d+\.\d+$/)
  assert.ok(calls.length > header.objects, `${calls.length} calls`)
  const kinds = callKinds(calls)
  assert.equal(kinds.filter((kind) => kind === 'create').length, header.objects)
  assert.ok(kinds.includes('update') && kinds.includes('resync'), 'status updates and resyncs')
  assert.equal(new Set(calls.filter((call) => call.path.endsWith('/finalize')).map((call) => (JSON.parse(call.body) as { object: { metadata: { name: string } } }).object.metadata.name)).size, header.deleted)
  assert.equal(expectedWriterRows(calls).length, header.objects - header.deleted)
  assert.ok(calls.every((call) => call.headers.authorization === undefined), 'no secret recorded')
})
