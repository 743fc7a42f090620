import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'

/**
 * How the Deployment runs the hook server (manifests/server/deployment.yaml): its NODE_OPTIONS and its memory limit.
 * The tests that hold the process to that limit, and the benchmark, start the server the same way.
 */

const UNITS: Record<string, number> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 }

export interface HookDeployment {
  /** The container's NODE_OPTIONS ('' when it sets none). */
  nodeOptions: string
  memoryLimitMiB: number
}

export function deployment (): HookDeployment {
  const manifest = parse(readFileSync(join(import.meta.dirname, '..', '..', 'manifests', 'server', 'deployment.yaml'), 'utf8'))
  const container = manifest.spec.template.spec.containers.find((c: { name: string }) => c.name === 'hooks')
  const nodeOptions: string = container.env?.find((e: { name: string }) => e.name === 'NODE_OPTIONS')?.value ?? ''
  const limit = /^(\d+)(Ki|Mi|Gi)$/.exec(String(container.resources.limits.memory))
  if (limit === null) throw new Error(`deployment.yaml: memory limit ${container.resources.limits.memory} is not <n>Ki, Mi or Gi`)
  return { nodeOptions, memoryLimitMiB: Number(limit[1]) * (UNITS[limit[2] as string] as number) }
}
