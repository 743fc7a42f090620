import { join } from 'node:path'
import { runCommand } from '../dev/command.js'

/** `npm run new-controller -- <name>`: see dev/new-controller.ts. */
// Imported as the command runs: a controller defined so that it cannot work is then one line, not a stack.
await runCommand(async (io) => {
  const [{ controllers }, { newController }] = await Promise.all([import('../hooks/controllers.js'), import('../dev/new-controller.js')])
  await newController(process.argv.slice(2), controllers, join(import.meta.dirname, '..'), io)
})
