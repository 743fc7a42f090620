import { join } from 'node:path'
import { commandArguments, runCommand } from '../dev/command.js'

/** `npm run generate`: see dev/generate.ts. */
commandArguments({
  usage: `usage: npm run generate
  Writes every generated file from the schemas in hooks/ and dev/monitoring/: the CRDs, the Metacontroller
  controllers, the examples, the plan's role and the monitoring under manifests/, docs/configuration.md, .env.example
  and the README's configuration table. Only the files whose content changes are written, and named.`,
  options: {}
})
// Imported as the command runs: a controller defined so that it cannot work is then one line, not a stack.
await runCommand(async (io) => {
  const [{ controllers }, { generate }] = await Promise.all([import('../hooks/controllers.js'), import('../dev/generate.js')])
  await generate(controllers, join(import.meta.dirname, '..'), io)
})
