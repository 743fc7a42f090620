/**
 * The node's daemons as child processes: each writes stdout and stderr to a log file of its own, is SIGKILLed when
 * this Node process exits, and is stopped with SIGTERM, then SIGKILL after a grace period. Also runs short commands
 * (ctr, buildah, ip, iptables) to completion.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

export interface Daemon {
  name: string
  pid: number | undefined
  logFile: string
  /** How it ended, once it has. */
  exited: { code: number | null, signal: NodeJS.Signals | null } | undefined
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. Idempotent. */
  stop: (graceMs?: number) => Promise<void>
}

/** A daemon's failure, with the end of its log. */
export class DaemonError extends Error {
  constructor (name: string, message: string, logFile?: string) {
    super(logFile === undefined ? `[node] ${name}: ${message}` : `[node] ${name}: ${message}\n--- last lines of ${logFile} ---\n${tail(logFile, 40)}\n--- end ---`)
    this.name = 'DaemonError'
  }
}

const running = new Set<ChildProcess>()
let exitHookInstalled = false

function killAllOnExit (): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const child of running) {
      try { child.kill('SIGKILL') } catch { /* gone */ }
    }
  })
}

export function startDaemon (name: string, file: string, args: string[], options: { logFile: string, env?: NodeJS.ProcessEnv, cwd?: string }): Daemon {
  const fd = openSync(options.logFile, 'a')
  writeFileSync(fd, `# ${new Date().toISOString()} ${file} ${args.join(' ')}\n`)
  const child = spawn(file, args, { stdio: ['ignore', fd, fd], env: { ...process.env, ...options.env }, cwd: options.cwd })
  closeSync(fd)
  running.add(child)
  killAllOnExit()
  child.unref()
  const daemon: Daemon = {
    name,
    pid: child.pid,
    logFile: options.logFile,
    exited: undefined,
    stop: async (graceMs = 10_000) => {
      if (daemon.exited !== undefined) return
      const exited = new Promise<void>((resolve) => { child.once('exit', () => { resolve() }) })
      child.kill('SIGTERM')
      const timer = setTimeout(() => { if (daemon.exited === undefined) child.kill('SIGKILL') }, graceMs)
      await exited
      clearTimeout(timer)
    }
  }
  child.on('exit', (code, signal) => {
    daemon.exited = { code, signal }
    running.delete(child)
  })
  child.on('error', (error) => {
    daemon.exited ??= { code: null, signal: null }
    running.delete(child)
    writeFileSync(options.logFile, `# spawn error: ${error.message}\n`, { flag: 'a' })
  })
  return daemon
}

/** Polls `ready` until it resolves true; fails at once when the daemon exits, or after `timeoutMs`, with its log. */
export async function waitReady (daemon: Daemon, timeoutMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (daemon.exited !== undefined) {
      throw new DaemonError(daemon.name, `exited during start-up (code ${daemon.exited.code}, signal ${daemon.exited.signal})`, daemon.logFile)
    }
    if (await ready().catch(() => false)) return
    if (Date.now() > deadline) throw new DaemonError(daemon.name, `not ready after ${timeoutMs / 1000} s`, daemon.logFile)
    await sleep(250)
  }
}

/** Runs a command to its end; resolves its stdout, rejects with the command and its stderr on a non-zero exit. */
export async function run (file: string, args: string[], options: { input?: string } = {}): Promise<string> {
  return await new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out).toString('utf8')
      if (code === 0) {
        resolve(stdout)
      } else {
        const stderr = Buffer.concat(err).toString('utf8').trim()
        reject(new Error(`${file} ${args.join(' ')} exited with ${code ?? signal}: ${stderr === '' ? stdout.trim() : stderr}`))
      }
    })
    child.stdin.on('error', () => { /* it exited before reading its input */ })
    child.stdin.end(options.input ?? '')
  })
}

/** The last `lines` lines of a file, or why there are none. */
export function tail (file: string, lines: number): string {
  try {
    const text = readFileSync(file, 'utf8').trimEnd()
    return text === '' ? '(empty)' : text.split('\n').slice(-lines).join('\n')
  } catch (error) {
    return `(cannot read: ${String(error)})`
  }
}
