import { controllers } from '../hooks/controllers.js'
import { runCommand } from '../dev/command.js'
import { render } from '../dev/render.js'

/** `npm run -s render -- <custom-resource.yaml> [--observed <children.yaml>] [--diff]`: see dev/render.ts. */
await runCommand(async (io) => { await render(process.argv.slice(2), controllers, io) })
