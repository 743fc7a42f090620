import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from './free-port.js'

/**
 * The hook server as a process of its own, for the tests that need a real process (signals, start-up, crashes), the
 * fault suite, the end-to-end suite, the image test and the benchmark. It is ready once `GET /healthz` answers on the
 * plain-HTTP probe port (or on the hook port, when the probe port is left to the system): that works whatever the log
 * level, TLS setting and output, and the server opens the probe port last, so it proves what callers need, listening
 * sockets.
 */

const root = join(import.meta.dirname, '..')
// Resolved here, so that a server running in another folder (`cwd`) finds it too.
const tsx = import.meta.resolve('tsx')

export interface ServerProcessOptions {
  /** The script to run, relative to the repository or absolute: by default `hooks/server.ts` (through tsx), the production entry point, which needs a database setting; `scripts/start.ts` is `npm start`'s. */
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
  /** Default: a free port (spawnServer: 0, for a start-up that is meant to fail). */
  port?: number
  /** HOOKS_PROBE_PORT. Default: a free port (spawnServer: 0, any port, unknown here). */
  probePort?: number
  /** Node's own flags, such as `--cpu-prof`. */
  nodeArgs?: string[]
  /**
   * Where stdout and stderr go: kept in memory (default), appended to a file, or, for a long load run that would
   * pile up a log line per request, stdout dropped and stderr passed through.
   */
  output?: 'memory' | 'discard' | { file: string }
  /**
   * Run the process in a process group of its own, and signal the whole group: for a `command` whose children would
   * outlive it (killing buildah alone leaves the server in the container running).
   */
  processGroup?: boolean
}

export interface ServerProcess {
  url: string
  port: number
  /** The probe port's `http://` URL; undefined when the system picked the port. */
  probeUrl: string | undefined
  process: ChildProcess
  pid: number
  /** stdout and stderr so far ('' when discarded). */
  output: () => string
  /** Resolves once the output holds `text`; fails if the process exits first, or after `timeoutMs`. */
  logged: (text: string, timeoutMs?: number) => Promise<void>
  /** The exit code, or null when a signal ended the process. */
  exited: Promise<number | null>
  running: () => boolean
  /** Resolves once `GET /healthz` answers 200 (on the probe port when known); fails at once if the process exits first. */
  listening: (timeoutMs?: number) => Promise<void>
  /** SIGTERM, then SIGKILL if the process has not exited within `graceMs`; resolves with the exit code. */
  stop: (graceMs?: number) => Promise<number | null>
  /** The CPU time the process has used, user and system, all threads (Linux: /proc/<pid>/stat, in 10 ms ticks). */
  cpuMs: () => number
  /** The peak resident set (MiB) since start or since the last resetPeakRss() (Linux: VmHWM). */
  peakRssMiB: () => number
  resetPeakRss: () => void
}

/** An `env` that removes every database setting, as on a fresh machine, and the mark of a test run. */
export function withoutDatabase (): Record<string, undefined> {
  return Object.fromEntries(Object.keys(process.env).filter((name) => ['DATABASE_URL', 'NODE_TEST_CONTEXT'].includes(name) || /^(PSQL_|PG)/.test(name)).map((name) => [name, undefined]))
}

/** Starts the process without waiting for it: for a start-up that is meant to fail. */
export function spawnServer (options: ServerProcessOptions = {}): ServerProcess {
  const entry = options.entry ?? 'hooks/server.ts'
  const [program, ...args] = options.command ?? [process.execPath, ...options.nodeArgs ?? [], ...entry.endsWith('.ts') ? ['--import', tsx] : [], resolve(root, entry)]
  if (program === undefined) throw new Error('command is empty: give the program to run, then its arguments')
  const port = options.port ?? 0
  const probePort = options.probePort ?? 0
  const output = options.output ?? 'memory'
  const logFile = typeof output === 'object' ? resolve(root, output.file) : undefined
  const fd = logFile === undefined ? undefined : openSync(logFile, 'a')
  const stdio: StdioOptions = fd !== undefined ? ['ignore', fd, fd] : output === 'discard' ? ['ignore', 'ignore', 'inherit'] : ['ignore', 'pipe', 'pipe']
  const child = spawn(program, args, {
    cwd: options.cwd ?? root,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), HOOKS_PROBE_PORT: String(probePort), HOOKS_SHUTDOWN_DELAY: '0', ...options.env },
    stdio,
    detached: options.processGroup === true
  })
  if (fd !== undefined) closeSync(fd)
  if (child.pid === undefined) throw new Error(`${program} did not start`)
  const pid = child.pid

  let captured = ''
  child.stdout?.on('data', (chunk: Buffer) => { captured += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { captured += chunk.toString() })
  const outputSoFar = (): string => logFile === undefined ? captured : readFileSync(logFile, 'utf8')

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

  const url = `http://127.0.0.1:${port}`
  const probeUrl = probePort === 0 ? undefined : `http://127.0.0.1:${probePort}`
  return {
    url,
    port,
    probeUrl,
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
    listening: async (timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        if (!running()) throw new Error(`the hook server exited at start-up:\n${outputSoFar()}`)
        if (await fetch(`${probeUrl ?? url}/healthz`, { signal: AbortSignal.timeout(2000) }).then((response) => response.ok, () => false)) return
        if (Date.now() > deadline) throw new Error(`the hook server did not listen within ${timeoutMs} ms:\n${outputSoFar()}`)
        await sleep(100)
      }
    },
    stop: async (graceMs = 10_000) => {
      if (running()) signal('SIGTERM')
      const timer = setTimeout(killAtExit, graceMs)
      const code = await exited
      clearTimeout(timer)
      return code
    },
    cpuMs: () => {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')
      return (Number(fields[11]) + Number(fields[12])) * 10
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

/** Starts the hook server on free ports (or `options.port`, `options.probePort`) and waits until it listens. */
export async function startServer (options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const server = spawnServer({ ...options, port: options.port ?? await freePort(), probePort: options.probePort ?? await freePort() })
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
      const response = await fetch(`${server.probeUrl ?? server.url}/readyz`, { signal: AbortSignal.timeout(5000) })
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
