import { join } from 'node:path'
import { runCommand } from '../dev/command.js'

/** `npm run check -- [<controller>]`: see dev/check.ts. */
// Imported as the command runs: a controller defined so that it cannot work is then one line, not a stack.
await runCommand(async (io) => {
  const [{ controllers }, { check }] = await Promise.all([import('../hooks/controllers.js'), import('../dev/check.js')])
  await check(process.argv.slice(2), controllers, join(import.meta.dirname, '..'), io)
})
