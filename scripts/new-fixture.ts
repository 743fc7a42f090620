import { join } from 'node:path'
import { runCommand } from '../dev/command.js'

/** `npm run new-fixture -- <controller> <case> [--resource <file>] [--after <case> | --observed <file>]`: see dev/new-fixture.ts. */
// Imported as the command runs: a controller defined so that it cannot work is then one line, not a stack.
await runCommand(async (io) => {
  const [{ controllers }, { newFixture }] = await Promise.all([import('../hooks/controllers.js'), import('../dev/new-fixture.js')])
  await newFixture(process.argv.slice(2), controllers, join(import.meta.dirname, '..'), io)
})
