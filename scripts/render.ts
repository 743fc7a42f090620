import { runCommand } from '../dev/command.js'

/** `npm run -s render -- <custom-resource.yaml> [--observed <children.yaml>] [--diff]`: see dev/render.ts. */
// Imported as the command runs: a controller defined so that it cannot work is then one line, not a stack.
await runCommand(async (io) => {
  const [{ controllers }, { render }] = await Promise.all([import('../hooks/controllers.js'), import('../dev/render.js')])
  await render(process.argv.slice(2), controllers, io)
})
