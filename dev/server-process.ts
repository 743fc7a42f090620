import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * The hook server as a process of its own, for the tests that need a real process (signals, start-up, crashes), the
 * fault suite, the end-to-end suite, the image test and the benchmark. Its ports are the system's choice unless given:
 * the server listens on port 0 and says which ports it got in its "hook server ready" line, logged once both listen.
 * A port found free beforehand would not do: another process can take it before the server starts, and under load the
 * system handed the same free port to two such callers.
 */

const root = join(import.meta.dirname, '..')
// Resolved here, so that a server running in another folder (`cwd`) finds it too.
const tsx = import.meta.resolve('tsx')
/** Compiled for a test run (dev/compiled-tree.ts), this module starts the server compiled beside it, as the image does. */
const compiledServer = import.meta.url.endsWith('.js') ? fileURLToPath(new URL('../hooks/server.js', import.meta.url)) : undefined

export interface ServerProcessOptions {
  /** The script to run, relative to the repository or absolute: by default `hooks/server.ts` (through tsx, or compiled when this module is), the production entry point, which needs a database setting; `scripts/start.ts` is `npm start`'s. */
  entry?: string
  /**
   * Another program that runs the server, with its arguments, instead of Node and `entry`: for example
   * `buildah run … -- <the image's entrypoint>`. The environment below is then that program's.
   */
  command?: string[]
  /** Where the process runs: the repository by default. */
  cwd?: string
  /**
   * Added to this process's environment, after HOST=127.0.0.1, PORT, HOOKS_PROBE_PORT and
   * HOOKS_SHUTDOWN_DELAY=0. A variable set to
   * undefined is removed.
   */
  env?: Record<string, string | undefined>
  /** Default: 0, a port the system picks, known once the server is ready. */
  port?: number
  /** HOOKS_PROBE_PORT. Default: 0, as `port`. */
  probePort?: number
  /** Node's own flags, such as `--cpu-prof`. */
  nodeArgs?: string[]
  /**
   * Where stdout and stderr go: kept in memory (default), appended to a file, or, for a long load run that would
   * pile up a log line per request, stdout dropped once the server is ready and stderr passed through.
   */
  output?: 'memory' | 'discard' | { file: string }
  /**
   * Run the process in a process group of its own, and signal the whole group: for a `command` whose children would
   * outlive it (killing buildah alone leaves the server in the container running).
   */
  processGroup?: boolean
}

export interface ServerProcess {
  /** The hook port's `http://` URL and number, and the probe port's URL: known once `listening()` resolved, unless given. */
  readonly url: string
  readonly port: number
  readonly probeUrl: string
  process: ChildProcess
  pid: number
  /** stdout and stderr so far ('' when discarded). */
  output: () => string
  /** Resolves once the output holds `text`; fails if the process exits first, or after `timeoutMs`. */
  logged: (text: string, timeoutMs?: number) => Promise<void>
  /** The exit code, or null when a signal ended the process. */
  exited: Promise<number | null>
  running: () => boolean
  /**
   * Resolves once the server has logged "hook server ready" (both ports listen then), or, with both ports given and a
   * log level above info, once `GET /healthz` answers 200 on the probe port; fails at once if the process exits first.
   * The default wait (60 s) is a backstop: five servers started at once beside a busy test run took over 30 s.
   */
  listening: (timeoutMs?: number) => Promise<void>
  /** SIGTERM, then SIGKILL if the process has not exited within `graceMs`; resolves with the exit code. */
  stop: (graceMs?: number) => Promise<number | null>
  /** The CPU time the process's threads have used, user and system (Linux: /proc/<pid>/task/<tid>/schedstat, in ns). */
  cpuMs: () => number
  /** The peak resident set (MiB) since start or since the last resetPeakRss() (Linux: VmHWM). */
  peakRssMiB: () => number
  resetPeakRss: () => void
}

interface Ports { port: number, probePort: number }

/** The ports of the server's "hook server ready" line in `output`, once it is there. */
function readyPorts (output: string): Ports | undefined {
  const at = output.indexOf('"msg":"hook server ready"')
  if (at === -1) return undefined
  const line = output.slice(output.lastIndexOf('\n', at) + 1, output.indexOf('\n', at) === -1 ? undefined : output.indexOf('\n', at))
  try {
    const { port, probePort } = JSON.parse(line) as Partial<Ports>
    return typeof port === 'number' && typeof probePort === 'number' ? { port, probePort } : undefined
  } catch {
    return undefined // the line is still being written
  }
}

/** An `env` that removes every database setting, as on a fresh machine, and the mark of a test run. */
export function withoutDatabase (): Record<string, undefined> {
  return Object.fromEntries(Object.keys(process.env).filter((name) => ['DATABASE_URL', 'NODE_TEST_CONTEXT'].includes(name) || /^(PSQL_|PG)/.test(name)).map((name) => [name, undefined]))
}

/** Starts the process without waiting for it: for a start-up that is meant to fail. */
export function spawnServer (options: ServerProcessOptions = {}): ServerProcess {
  const entry = options.entry ?? compiledServer ?? 'hooks/server.ts'
  const [program, ...args] = options.command ?? [process.execPath, ...options.nodeArgs ?? [], ...entry.endsWith('.ts') ? ['--import', tsx] : [], resolve(root, entry)]
  if (program === undefined) throw new Error('command is empty: give the program to run, then its arguments')
  const given = { port: options.port ?? 0, probePort: options.probePort ?? 0 }
  const logLevel = options.env?.LOG_LEVEL ?? process.env.LOG_LEVEL
  if ((given.port === 0 || given.probePort === 0) && logLevel !== undefined && ['warn', 'error', 'fatal', 'silent'].includes(logLevel)) {
    throw new Error(`LOG_LEVEL=${logLevel} hides the "hook server ready" line that names the ports the system picked: give port and probePort, or log at info`)
  }
  const output = options.output ?? 'memory'
  const logFile = typeof output === 'object' ? resolve(root, output.file) : undefined
  const fd = logFile === undefined ? undefined : openSync(logFile, 'a')
  // A file may hold the lines of an earlier server: this one's start after them.
  const logStart = fd === undefined ? 0 : fstatSync(fd).size
  const stdio: StdioOptions = fd !== undefined ? ['ignore', fd, fd] : output === 'discard' ? ['ignore', 'pipe', 'inherit'] : ['ignore', 'pipe', 'pipe']
  const child = spawn(program, args, {
    cwd: options.cwd ?? root,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(given.port), HOOKS_PROBE_PORT: String(given.probePort), HOOKS_SHUTDOWN_DELAY: '0', ...options.env },
    stdio,
    detached: options.processGroup === true
  })
  if (fd !== undefined) closeSync(fd)
  if (child.pid === undefined) throw new Error(`${program} did not start`)
  const pid = child.pid

  let captured = ''
  let ports: Ports | undefined = given.port !== 0 && given.probePort !== 0 ? given : undefined
  child.stdout?.on('data', (chunk: Buffer) => {
    // Discarded output is kept only until the ready line has been read from it.
    if (output === 'discard' && ports !== undefined) return
    captured += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => { captured += chunk.toString() })
  const outputSoFar = (): string => logFile === undefined ? (output === 'discard' ? '' : captured) : readFileSync(logFile, 'utf8')
  /** The ports, from the ready line once it is there. */
  const readPorts = (): Ports | undefined => {
    const ready = readyPorts(logFile === undefined ? captured : outputSoFar().slice(logStart))
    if (ready !== undefined) {
      ports = ready
      if (output === 'discard') captured = ''
    }
    return ready
  }
  const known = (): Ports => {
    if (ports === undefined && readPorts() === undefined) throw new Error('the hook server\'s ports are the system\'s choice, known once it has logged "hook server ready": await listening() first')
    return ports as Ports
  }

  const running = (): boolean => child.exitCode === null && child.signalCode === null
  const signal = (name: NodeJS.Signals): void => {
    try {
      process.kill(options.processGroup === true ? -pid : pid, name)
    } catch {} // already gone
  }
  // A test that fails or is interrupted must not leave a server behind.
  const killAtExit = (): void => { if (running() || options.processGroup === true) signal('SIGKILL') }
  process.once('exit', killAtExit)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
    process.removeListener('exit', killAtExit)
    // The group's other processes (the server inside a container) go with it.
    if (options.processGroup === true) signal('SIGKILL')
    resolve(code)
  }))

  return {
    get url () { return `http://127.0.0.1:${known().port}` },
    get port () { return known().port },
    get probeUrl () { return `http://127.0.0.1:${known().probePort}` },
    process: child,
    pid,
    output: outputSoFar,
    logged: async (text, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs
      while (!outputSoFar().includes(text)) {
        if (!running()) throw new Error(`the hook server exited without logging ${JSON.stringify(text)}:\n${outputSoFar()}`)
        if (Date.now() > deadline) throw new Error(`the hook server did not log ${JSON.stringify(text)} within ${timeoutMs} ms:\n${outputSoFar()}`)
        await sleep(50)
      }
    },
    exited,
    running,
    listening: async (timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        if (readPorts() !== undefined) return
        if (!running()) throw new Error(`the hook server exited at start-up:\n${outputSoFar()}`)
        if (given.port !== 0 && given.probePort !== 0 && await fetch(`http://127.0.0.1:${given.probePort}/healthz`, { signal: AbortSignal.timeout(2000) }).then((response) => response.ok, () => false)) return
        if (Date.now() > deadline) throw new Error(`the hook server did not log "hook server ready" within ${timeoutMs} ms:\n${outputSoFar()}`)
        await sleep(50)
      }
    },
    stop: async (graceMs = 10_000) => {
      if (running()) signal('SIGTERM')
      const timer = setTimeout(killAtExit, graceMs)
      const code = await exited
      clearTimeout(timer)
      return code
    },
    // Each thread's time on a CPU, in nanoseconds. /proc/<pid>/stat counts it in 10 ms ticks, each of its two fields cut
    // down to a whole tick, where a side spends some 170 ms in one slice of the bench's fixed cost. A thread that has
    // ended is not counted; the server's threads (V8's, libuv's) last as long as the process.
    cpuMs: () => {
      let nanoseconds = 0
      for (const thread of readdirSync(`/proc/${child.pid}/task`)) {
        try {
          nanoseconds += Number(readFileSync(`/proc/${child.pid}/task/${thread}/schedstat`, 'utf8').split(' ')[0])
        } catch {
          // ended since the folder was read
        }
      }
      return nanoseconds / 1e6
    },
    peakRssMiB: () => {
      const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
      if (match === null) throw new Error(`no VmHWM in /proc/${child.pid}/status`)
      return Number(match[1]) / 1024
    },
    // Writing 5 to clear_refs resets VmHWM.
    resetPeakRss: () => { writeFileSync(`/proc/${child.pid}/clear_refs`, '5') }
  }
}

/** Starts the hook server on ports the system picks (or `options.port`, `options.probePort`) and waits until it listens. */
export async function startServer (options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const server = spawnServer(options)
  try {
    await server.listening()
  } catch (error) {
    await server.stop()
    throw error
  }
  return server
}

/**
 * Polls `GET /readyz` (on the probe port when known) until it answers `status` and, when `database` is given, reports
 * the database in that state.
 */
export async function waitForReadiness (server: ServerProcess, status: 200 | 503, timeoutMs: number, database?: 'up' | 'down'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = 'no answer yet'
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${server.probeUrl}/readyz`, { signal: AbortSignal.timeout(5000) })
      const body = await response.text()
      last = `${response.status} ${body}`
      if (response.status === status && (database === undefined || (JSON.parse(body) as { database?: { status?: string } }).database?.status === database)) return
    } catch (error) {
      last = String(error)
    }
    await sleep(200)
  }
  throw new Error(`/readyz did not answer ${status}${database === undefined ? '' : ` with the database ${database}`} within ${timeoutMs} ms; last answer: ${last}`)
}
