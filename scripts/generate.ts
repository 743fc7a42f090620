import { join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { runCommand } from '../dev/command.js'
import { generate } from '../dev/generate.js'

/** `npm run generate`: see dev/generate.ts. */
await runCommand(async (io) => { await generate(controllers, join(import.meta.dirname, '..'), io) })
