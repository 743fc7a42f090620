import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { test } from 'node:test'

/** The server's modules import one another without a cycle, type-only imports included. */

const hooks = join(import.meta.dirname, '..', 'hooks')

function importsOf (file: string): string[] {
  const text = readFileSync(join(hooks, file), 'utf8')
  return [...text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)\.js'/gm)].map((match) => normalize(join(dirname(file), `${match[1] as string}.ts`)))
}

test('no module of hooks/ imports itself through others', () => {
  const graph = new Map(readdirSync(hooks, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts')).map((file) => [file, importsOf(file)]))
  const cycles: string[] = []
  const done = new Set<string>()
  const visit = (file: string, path: string[]): void => {
    if (path.includes(file)) {
      cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '))
      return
    }
    if (done.has(file)) return
    for (const next of graph.get(file) ?? []) visit(next, [...path, file])
    done.add(file)
  }
  for (const file of graph.keys()) visit(file, [])
  assert.deepEqual(cycles, [])
})
