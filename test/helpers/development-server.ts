import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { developmentDataDir } from '../../dev/embedded-postgres.js'
import { spawnServer, withoutDatabase, type ServerProcess } from '../../dev/server-process.js'

/**
 * `npm start` (scripts/start.ts) in a checkout folder of the test's own, so that each test has its own development
 * database.
 */

/** A folder the server runs in as in a checkout; it and the server's development database are removed afterwards. */
export async function checkout (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hooks-checkout-'))
  t.after(async () => {
    await rm(dir, { recursive: true, force: true })
    await rm(developmentDataDir(dir), { recursive: true, force: true })
  })
  return dir
}

/**
 * `npm start`'s entry point (of this checkout, unless given) run in `cwd` with no database setting, on ports the
 * system picks, without waiting for it; stopped when the test ends.
 */
export function startDevelopmentServer (t: TestContext, cwd: string, env: Record<string, string | undefined> = {}, entry = 'scripts/start.ts'): ServerProcess {
  const server = spawnServer({ cwd, entry, env: { ...withoutDatabase(), ...env } })
  t.after(async () => { await server.stop() })
  return server
}
