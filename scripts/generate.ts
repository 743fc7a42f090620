import { join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { commandArguments, runCommand } from '../dev/command.js'
import { generate } from '../dev/generate.js'

/** `npm run generate`: see dev/generate.ts. */
commandArguments({
  usage: `usage: npm run generate
  Writes every generated file from the schemas in hooks/ and dev/monitoring/: the CRDs, the Metacontroller
  controllers, the examples, the plan's role and the monitoring under manifests/, docs/configuration.md, .env.example
  and the README's configuration table. Only the files whose content changes are written, and named.`,
  options: {}
})
await runCommand(async (io) => { await generate(controllers, join(import.meta.dirname, '..'), io) })
