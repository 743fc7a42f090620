import { readFileSync } from 'node:fs'
import { relative } from 'node:path'

/**
 * `tsx bench/profile-summary.ts <file.cpuprofile> [count]`: the functions with the most self time in a profile
 * written by `BENCH_CPU_PROF=<folder> npm run bench`, with their share of the samples.
 */

interface ProfileNode {
  id: number
  callFrame: { functionName: string, url: string, lineNumber: number }
  hitCount?: number
}

interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const [file, count = '25'] = process.argv.slice(2)
if (file === undefined) throw new Error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [count]')
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile

const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
const selfMs = new Map<string, number>()
let totalMs = 0
profile.samples.forEach((id, index) => {
  const node = nodes.get(id)
  const ms = (profile.timeDeltas[index] ?? 0) / 1000
  if (node === undefined) return
  const { functionName, url, lineNumber } = node.callFrame
  const where = url === '' ? '' : ` ${relative(process.cwd(), url.replace(/^file:\/\//, ''))}:${lineNumber + 1}`
  const key = `${functionName === '' ? '(anonymous)' : functionName}${where}`
  selfMs.set(key, (selfMs.get(key) ?? 0) + ms)
  totalMs += ms
})

const idleMs = selfMs.get('(idle)') ?? 0
selfMs.delete('(idle)')
const busyMs = totalMs - idleMs
process.stdout.write(`${(totalMs / 1000).toFixed(1)} s sampled, ${(busyMs / 1000).toFixed(1)} s busy; self time, share of busy:\n`)
for (const [name, ms] of [...selfMs].sort((a, b) => b[1] - a[1]).slice(0, Number(count))) {
  process.stdout.write(`${ms.toFixed(0).padStart(8)} ms  ${(ms / busyMs * 100).toFixed(1).padStart(5)}%  ${name}\n`)
}
