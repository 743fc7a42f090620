import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'

/**
 * How the Deployment runs the hook server (manifests/server/deployment.yaml): the Node.js flags of its command and its
 * memory limit. The tests that hold the process to that limit, and the benchmark, start the server the same way.
 */

const UNITS: Record<string, number> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 }

export interface HookDeployment {
  /** The flags the container's command gives Node.js, before the script. */
  nodeArgs: string[]
  /** The script the command runs, as in the image: `dist/server.js`. */
  script: string
  memoryLimitMiB: number
}

export function deployment (): HookDeployment {
  const manifest = parse(readFileSync(join(import.meta.dirname, '..', 'manifests', 'server', 'deployment.yaml'), 'utf8'))
  const container = manifest.spec.template.spec.containers.find((c: { name: string }) => c.name === 'hooks')
  const command: string[] = container.command ?? []
  const [program, ...nodeArgs] = command
  const script = nodeArgs.pop()
  if (program !== 'node' || script === undefined || nodeArgs.some((arg) => !arg.startsWith('--'))) {
    throw new Error(`deployment.yaml: the hooks container's command ${JSON.stringify(command)} is not node, its flags, then the script`)
  }
  const limit = /^(\d+)(Ki|Mi|Gi)$/.exec(String(container.resources.limits.memory))
  if (limit === null) throw new Error(`deployment.yaml: memory limit ${container.resources.limits.memory} is not <n>Ki, Mi or Gi`)
  return { nodeArgs, script, memoryLimitMiB: Number(limit[1]) * (UNITS[limit[2] as string] as number) }
}
