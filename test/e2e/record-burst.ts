import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { controllers } from '../../hooks/controllers.js'
import { CommandError, parseCommand, runCommand } from '../../dev/command.js'
import { callKinds, callObject, expectedWriterRows, recordingFacts, startRecordingProxy, writeRecording, type RecordedCall, type WriterRow } from '../../dev/hook-recording.js'
import { startEnvironment, type Environment } from './environment.js'
import { writeOverlay } from './overlay.js'

/**
 * `npm run bench:record`: records the burst that the benchmark replays (bench/replay.ts), from the Metacontroller of
 * the end-to-end rig (test/e2e/environment.ts), through a recording proxy in front of the hook server
 * (dev/hook-recording.ts).
 */

const root = join(import.meta.dirname, '..', '..')
const USAGE = `usage: npm run bench:record -- [--objects <n>] [--delete <n>] [--out <file>] [--metacontroller-version <v>]

Records a burst of PostgresWriter hook calls made by a real Metacontroller, for the benchmark to replay. Starts the
end-to-end rig (its binaries first built by scripts/build-e2e-binaries.sh; E2E_BIN_DIR and E2E_METACONTROLLER as for
npm run test:e2e), a PostgreSQL and the hook server, and points every controller at a proxy that records each hook
call with its answer. Then applies --objects PostgresWriters at once (default 300), waits until each is Ready and has
been resynced at least once, deletes --delete of them (default 200) and waits until they are gone. Checks that the database
holds the rows the recording says it must, and writes the recording to --out (default
bench/recordings/postgres-writer-burst.jsonl.gz). --metacontroller-version names the version of a build given by
E2E_METACONTROLLER, which carries no stamp. Takes a few minutes.
`

/** The recording's namespace, and the probe's, which shows that Metacontroller calls through the proxy. */
const NAMESPACE = 'bench-burst'
const PROBE_NAMESPACE = 'bench-burst-probe'
/** Short enough for every object to be resynced within the burst, long enough to tell a resync from the syncs before it. */
const RESYNC_PERIOD_SECONDS = 20
const TABLES = ['students', 'teachers']
const COUNTRIES = ['canada', 'france', 'japan', 'kenya', 'peru']

function options (): { objects: number, deleted: number, out: string, metacontrollerVersion: string | undefined } {
  const { values: parsed } = parseCommand(process.argv.slice(2), {
    usage: USAGE,
    options: { objects: { type: 'string' }, delete: { type: 'string' }, out: { type: 'string' }, 'metacontroller-version': { type: 'string' } }
  })
  const count = (flag: string, text: string | undefined, fallback: number): number => {
    if (text === undefined) return fallback
    const value = Number(text)
    if (!Number.isInteger(value) || value < 1) throw new CommandError(`--${flag} ${text}: give a whole number of objects, 1 or more`)
    return value
  }
  const objects = count('objects', parsed.objects, 300)
  const deleted = count('delete', parsed.delete, Math.min(200, objects))
  if (deleted > objects) throw new CommandError(`--delete ${deleted}: at most the ${objects} objects applied`)
  return { objects, deleted, out: resolve(parsed.out ?? join(root, 'bench', 'recordings', 'postgres-writer-burst.jsonl.gz')), metacontrollerVersion: parsed['metacontroller-version'] }
}

const writerName = (index: number): string => `writer-${String(index).padStart(4, '0')}`

function writer (namespace: string, index: number): Record<string, unknown> {
  return {
    apiVersion: 'demo.yash.com/v1',
    kind: 'PostgresWriter',
    metadata: { name: writerName(index), namespace },
    spec: { table: TABLES[index % TABLES.length], name: `person-${index}`, age: 18 + (index % 60), country: COUNTRIES[index % COUNTRIES.length] }
  }
}

const list = (items: unknown[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items })

/** Polls `done` every second until it holds, or fails with `what` after `seconds`. */
async function waitFor (what: string, seconds: number, done: () => Promise<boolean> | boolean): Promise<void> {
  for (const deadline = Date.now() + seconds * 1000; !await done(); await sleep(1000)) {
    if (Date.now() > deadline) throw new Error(`gave up after ${seconds} s waiting for ${what}`)
  }
}

const log = (line: string): void => { process.stderr.write(`[record-burst] ${line}\n`) }

/** The rows of the recording's objects in the database, sorted by id. */
async function rowsFound (environment: Environment): Promise<WriterRow[]> {
  const found: WriterRow[] = []
  for (const table of TABLES) {
    const rows = await environment.postgres.query<Omit<WriterRow, 'table'>>(`SELECT id, name, age, country FROM public."${table}" WHERE id LIKE $1`, [`${NAMESPACE}/%`]).catch(() => [])
    found.push(...rows.map((row) => ({ table, ...row })))
  }
  return found.sort((a, b) => a.id.localeCompare(b.id))
}

async function record ({ objects, deleted, out, metacontrollerVersion }: NonNullable<ReturnType<typeof options>>): Promise<void> {
  const environment = await startEnvironment()
  const { cluster } = environment
  const metacontroller = metacontrollerVersion ?? cluster.metacontrollerVersion
  if (metacontroller === undefined) {
    await environment.stop()
    throw new CommandError('this Metacontroller build carries no version stamp: name it with --metacontroller-version')
  }
  log(`rig ready: Metacontroller ${metacontroller}, hooks ${environment.hookVersion}; logs in ${cluster.logsDir}`)
  const proxy = await startRecordingProxy(environment.hookServer.url)
  const overlay = await mkdtemp(join(tmpdir(), 'record-burst-'))
  try {
    await writeOverlay(controllers, join(root, 'manifests'), overlay, { hookServerUrl: proxy.url, resyncPeriodSeconds: RESYNC_PERIOD_SECONDS, stripHookVersion: environment.hookVersion === 'v1' })
    await cluster.kubectl(['apply', '-k', overlay])
    // Metacontroller takes the controllers' new webhooks when it next reads them: a probe shows it calls the proxy.
    await cluster.kubectl(['create', 'namespace', PROBE_NAMESPACE])
    await cluster.kubectl(['apply', '-f', '-'], list([writer(PROBE_NAMESPACE, 0)]))
    await waitFor('a hook call through the proxy', 120, () => proxy.calls().some((call) => callObject(call).key.startsWith(`${PROBE_NAMESPACE}/`)))
    await cluster.kubectl(['delete', 'postgreswriters', '--namespace', PROBE_NAMESPACE, '--all', '--wait=true', '--timeout=120s'])

    await cluster.kubectl(['create', 'namespace', NAMESPACE])
    proxy.restart()
    const recordedAt = new Date().toISOString()
    log(`applying ${objects} PostgresWriters at once`)
    await cluster.kubectl(['apply', '-f', '-'], list(Array.from({ length: objects }, (_, index) => writer(NAMESPACE, index))))
    await waitFor(`${objects} PostgresWriters Ready`, 600, async () => {
      const { items } = JSON.parse(await cluster.kubectl(['get', 'postgreswriters', '--namespace', NAMESPACE, '-o', 'json'])) as { items: Array<{ status?: { conditions?: Array<{ type: string, status: string }> } }> }
      return items.filter((item) => item.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True')).length === objects
    })
    log('every object Ready; waiting for each to be resynced')
    await waitFor(`a resync of each of the ${objects} objects`, RESYNC_PERIOD_SECONDS * 6, () => {
      const calls = proxy.calls()
      const resynced = new Set(callKinds(calls).flatMap((kind, index) => kind === 'resync' ? [callObject(calls[index] as RecordedCall).key] : []))
      return resynced.size === objects
    })
    log(`deleting ${deleted} of them`)
    await cluster.kubectl(['delete', 'postgreswriters', '--namespace', NAMESPACE, '--wait=true', '--timeout=600s', ...Array.from({ length: deleted }, (_, index) => writerName(index))])
    // The answers of calls still in flight.
    await sleep(2000)
    const calls = proxy.calls()

    const expected = expectedWriterRows(calls)
    const found = await rowsFound(environment)
    if (JSON.stringify(found) !== JSON.stringify(expected)) {
      throw new Error(`the database holds ${found.length} rows of the burst's objects where the recording leaves ${expected.length}, or not the same: nothing written`)
    }
    const kubernetes = (JSON.parse(await cluster.kubectl(['version', '-o', 'json'])) as { serverVersion: { gitVersion: string } }).serverVersion.gitVersion
    const recording = {
      header: {
        metacontroller,
        kubernetes,
        recordedAt,
        scenario: `npm run bench:record -- --objects ${objects} --delete ${deleted}: ${objects} PostgresWriters applied at once, each Ready and resynced at least once (resync period ${RESYNC_PERIOD_SECONDS} s), then ${deleted} deleted`,
        objects,
        deleted,
        resyncPeriodSeconds: RESYNC_PERIOD_SECONDS
      },
      calls
    }
    await writeRecording(out, recording)
    const facts = recordingFacts(recording, relative(root, out))
    log(`${facts.calls} calls in ${facts.seconds.toFixed(0)} s, at most ${facts.maxInFlight} at once (${Object.entries(facts.kinds).map(([kind, count]) => `${count} ${kind}`).join(', ')}); ` +
      `${expected.length} rows left, as the database holds them; ${facts.file}, ${((await stat(out)).size / 1024).toFixed(0)} KiB`)
  } finally {
    await proxy.close()
    await rm(overlay, { recursive: true, force: true })
    await environment.stop()
  }
}

await runCommand(async () => {
  await record(options())
})
