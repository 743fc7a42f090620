import { join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { runCommand } from '../dev/command.js'
import { newFixture } from '../dev/new-fixture.js'

/** `npm run new-fixture -- <controller> <case> [--resource <file>] [--after <case> | --observed <file>]`: see dev/new-fixture.ts. */
await runCommand(async (io) => { await newFixture(process.argv.slice(2), controllers, join(import.meta.dirname, '..'), io) })
