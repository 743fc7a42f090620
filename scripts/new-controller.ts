import { join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { runCommand } from '../dev/command.js'
import { newController } from '../dev/new-controller.js'

/** `npm run new-controller -- <name>`: see dev/new-controller.ts. */
await runCommand(async (io) => { await newController(process.argv.slice(2), controllers, join(import.meta.dirname, '..'), io) })
