import { join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { check } from '../dev/check.js'
import { runCommand } from '../dev/command.js'

/** `npm run check -- [<controller>]`: see dev/check.ts. */
await runCommand(async (io) => { await check(process.argv.slice(2), controllers, join(import.meta.dirname, '..'), io) })
