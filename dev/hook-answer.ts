import { build } from '../hooks/runtime/build.js'
import { loadConfig } from '../hooks/runtime/config.js'
import type { Controller } from '../hooks/framework/controller.js'

/** The fixed clock of the fixtures and the tests: new conditions are stamped with it. */
export const NOW = new Date('2026-11-22T12:00:00Z')

/**
 * The answer of a controller's sync hook to a request, through the server's own routes (request checks, the
 * InvalidSpec answer, error bodies), with no port, no database and the given clock: what `npm run render` and
 * `npm run new-fixture` show. Only for a controller that needs no I/O.
 */
export async function syncAnswer (controller: Controller, request: unknown, clock: () => Date): Promise<{ statusCode: number, body: any }> {
  const { app } = await build({ config: loadConfig({ LOG_LEVEL: 'silent' }), controllers: [controller], clock })
  try {
    const response = await app.inject({ method: 'POST', url: `/${controller.name}/sync`, payload: JSON.stringify(request), headers: { 'content-type': 'application/json' } })
    return { statusCode: response.statusCode, body: response.json() }
  } finally {
    await app.close()
  }
}
