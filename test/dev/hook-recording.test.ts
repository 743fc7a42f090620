import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { text } from 'node:stream/consumers'
import { test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { callKinds, expectedWriterRows, readRecording, recordingFacts, startRecordingProxy, writeRecording, type RecordedCall } from '../../dev/hook-recording.js'

/** The recording proxy, the file a recording is kept in, and what a recording says (dev/hook-recording.ts). */

/** A PostgresWriter hook request about `name` at `resourceVersion`, with its spec. */
function writerBody (name: string, resourceVersion: string, spec: { table: string, name: string, age: number, country: string } = { table: 'students', name: 'alex', age: 23, country: 'canada' }): string {
  return JSON.stringify({ object: { apiVersion: 'demo.yash.com/v1', kind: 'PostgresWriter', metadata: { namespace: 'burst', name, uid: `00000000-0000-4000-8000-00000000000${name.length}`, resourceVersion }, spec } })
}

const ready = (status: 'True' | 'False', reason: string): string => JSON.stringify({ status: { conditions: [{ type: 'Ready', status, reason }] }, attachments: [] })

function call (path: string, body: string, answer: string, sentAt: number, answeredAt: number, status = 200): RecordedCall {
  return { sentAt, answeredAt, method: 'POST', path, headers: { 'content-type': 'application/json' }, body, status, answer }
}

test('the proxy forwards each call as it came and records it with its answer, in the order the calls arrived, its secret left out', async (t) => {
  const seen: Array<{ path: string, headers: IncomingHttpHeaders, body: string }> = []
  let firstForwarded = (): void => {}
  const forwarded = new Promise<void>((resolve) => { firstForwarded = resolve })
  let otherAnswered = (): void => {}
  const othersAnswered = new Promise<void>((resolve) => { let count = 0; otherAnswered = () => { if (++count === 2) resolve() } })
  const upstream = createServer((request, response) => {
    void text(request).then(async (body) => {
      seen.push({ path: request.url ?? '', headers: request.headers, body })
      if (body.includes('first')) firstForwarded()
      // The first call is answered last, once the two after it are: the recording keeps the order of arrival.
      if (body.includes('first')) await othersAnswered
      if (body.includes('second') || body.includes('refused')) response.once('finish', otherAnswered)
      response.writeHead(body.includes('refused') ? 422 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: body }))
    })
  })
  upstream.listen(0, '127.0.0.1')
  await once(upstream, 'listening')
  t.after(() => { upstream.close() })
  const proxy = await startRecordingProxy(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`)
  t.after(async () => { await proxy.close() })

  const send = async (path: string, body: string): Promise<Response> => await fetch(`${proxy.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer s3cret', 'x-trace': 'kept' }, body })
  await send('/ignored/sync', '{"before":"restart"}')
  proxy.restart()
  const first = send('/postgres-writer/sync', '{"first":true}')
  await forwarded
  const [second, refused] = await Promise.all([send('/postgres-writer/finalize', '{"second":true}'), send('/postgres-writer/sync', '{"refused":true}')])
  assert.equal((await first).status, 200)
  assert.deepEqual(await second.json(), { echoed: '{"second":true}' }, 'the answer is relayed as the hook server gave it')
  assert.equal(refused.status, 422)

  assert.equal(seen.find((one) => one.body === '{"first":true}')?.headers.authorization, 'Bearer s3cret', 'forwarded with its token')
  const calls = proxy.calls()
  const recorded = calls.map((one) => [one.path, one.body, one.status, one.answer])
  assert.equal(recorded.length, 3, 'the call before the restart is forgotten')
  assert.deepEqual(recorded[0], ['/postgres-writer/sync', '{"first":true}', 200, JSON.stringify({ echoed: '{"first":true}' })], 'the first to arrive first')
  // The other two arrived together, in either order.
  assert.deepEqual(recorded.slice(1).sort((a, b) => String(a[1]).localeCompare(String(b[1]))), [
    ['/postgres-writer/sync', '{"refused":true}', 422, JSON.stringify({ echoed: '{"refused":true}' })],
    ['/postgres-writer/finalize', '{"second":true}', 200, JSON.stringify({ echoed: '{"second":true}' })]
  ])
  for (const one of calls) {
    assert.equal(one.headers.authorization, undefined, 'the secret is not recorded')
    assert.equal(one.headers['x-trace'], 'kept')
    assert.equal(one.method, 'POST')
    assert.ok(one.sentAt >= 0 && one.answeredAt >= one.sentAt)
  }
  assert.ok((calls[0] as RecordedCall).answeredAt > (calls[1] as RecordedCall).answeredAt, 'the first call arrived first and was answered last')
})

test('a recording is kept gzipped, a header line then one call per line, and reads back as written', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'hook-recording-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const file = join(dir, 'burst.jsonl.gz')
  const recording = {
    header: { metacontroller: 'v4.17.2', kubernetes: 'v1.36.3', recordedAt: '2026-12-02T07:00:00.000Z', scenario: 'a test', objects: 1, deleted: 0, resyncPeriodSeconds: 20 },
    calls: [call('/postgres-writer/sync', writerBody('a', '1'), ready('True', 'RowWritten'), 0, 3)]
  }
  await writeRecording(file, recording)
  const lines = gunzipSync(await readFile(file)).toString('utf8').split('\n')
  assert.deepEqual(lines.map((line) => line === '' ? '' : Object.keys(JSON.parse(line) as object)[0]), ['metacontroller', 'sentAt', ''])
  assert.deepEqual(await readRecording(file), recording)
})

test('each call has its kind, and a recording its figures: calls by kind, the most in flight at once, its length', () => {
  const calls = [
    call('/postgres-writer/sync', writerBody('a', '1'), ready('True', 'RowWritten'), 0, 10),
    call('/postgres-writer/sync', writerBody('b', '2'), ready('True', 'RowWritten'), 5, 12),
    call('/postgres-writer/sync', writerBody('a', '3'), ready('True', 'RowWritten'), 12, 14),
    call('/postgres-writer/sync', writerBody('a', '3'), ready('True', 'RowWritten'), 14, 20),
    call('/postgres-writer/finalize', writerBody('b', '4'), JSON.stringify({ finalized: true }), 20, 2020)
  ]
  assert.deepEqual(callKinds(calls), ['create', 'create', 'update', 'resync', 'finalize'], 'a new resourceVersion is an update, the same one a resync')
  const facts = recordingFacts({ header: { metacontroller: 'v4.17.2', kubernetes: 'v1.36.3', recordedAt: '2026-12-02T07:00:00.000Z', scenario: '', objects: 2, deleted: 1, resyncPeriodSeconds: 20 }, calls }, 'burst.jsonl.gz')
  assert.deepEqual(facts.kinds, { create: 2, update: 1, resync: 1, finalize: 1 })
  assert.equal(facts.maxInFlight, 2, 'a call answered as the next arrives does not overlap it')
  assert.equal(facts.seconds, 2.02)
  assert.equal(facts.calls, 5)
})

test('the rows a PostgresWriter recording leaves: each object\'s last spec answered Ready, none for one finalized, none from a refused call', () => {
  const moved = { table: 'teachers', name: 'alex', age: 24, country: 'canada' }
  const rows = expectedWriterRows([
    call('/postgres-writer/sync', writerBody('a', '1'), ready('True', 'RowWritten'), 0, 1),
    call('/postgres-writer/sync', writerBody('a', '2', moved), ready('True', 'RowMoved'), 2, 3),
    call('/postgres-writer/sync', writerBody('b', '1'), ready('True', 'RowWritten'), 4, 5),
    call('/postgres-writer/finalize', writerBody('b', '2'), JSON.stringify({ finalized: false }), 6, 7),
    call('/postgres-writer/sync', writerBody('c', '1'), ready('True', 'RowWritten'), 8, 9),
    call('/postgres-writer/finalize', writerBody('c', '2'), JSON.stringify({ finalized: true }), 10, 11),
    call('/postgres-writer/sync', writerBody('d', '1', { ...moved, table: 'Bad' }), ready('False', 'InvalidSpec'), 12, 13),
    call('/postgres-writer/sync', writerBody('e', '1'), '{"error":"Bad Request"}', 14, 15, 400)
  ])
  assert.deepEqual(rows, [
    { table: 'teachers', id: 'burst/a', name: 'alex', age: 24, country: 'canada' },
    { table: 'students', id: 'burst/b', name: 'alex', age: 23, country: 'canada' }
  ])
})
