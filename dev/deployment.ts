import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { variables } from '../hooks/runtime/config-schema.js'

/**
 * How the Deployment runs the hook server (manifests/server/deployment.yaml): the Node.js flags of its command, the
 * environment it sets for the runtime under the server, and its memory limit. The tests that hold the process to that
 * limit, and the benchmark, start the server the same way.
 */

const UNITS: Record<string, number> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 }

export interface HookDeployment {
  /** The flags the container's command gives Node.js, before the script. */
  nodeArgs: string[]
  /** The script the command runs, as in the image: `dist/server.js`. */
  script: string
  /** The container's `env` values that are not the server's configuration: they set up the runtime (glibc's malloc). */
  runtimeEnv: Record<string, string>
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
  const settings = new Set(variables().map(([name]) => name))
  const env: Array<{ name: string, value?: string }> = container.env ?? []
  const runtimeEnv = Object.fromEntries(env.filter(({ name, value }) => !settings.has(name) && value !== undefined).map(({ name, value }) => [name, String(value)]))
  return { nodeArgs, script, runtimeEnv, memoryLimitMiB: Number(limit[1]) * (UNITS[limit[2] as string] as number) }
}
