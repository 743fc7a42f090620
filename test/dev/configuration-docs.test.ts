import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { variables } from '../../hooks/runtime/config-schema.js'
import { loadConfig } from '../../hooks/runtime/config.js'
import { configurationPage, environmentExample, README_TABLE_START, withReadmeTable } from '../../dev/configuration-docs.js'
import { deployment } from '../../dev/deployment.js'

const root = join(import.meta.dirname, '..', '..')
const read = (path: string): string => readFileSync(join(root, path), 'utf8')
const stale = (path: string): string => `${path} is stale: run \`npm run generate\` and commit the result`

test('docs/configuration.md and .env.example are what `npm run generate` writes from the configuration schema', () => {
  assert.equal(read('docs/configuration.md'), configurationPage(), stale('docs/configuration.md'))
  assert.equal(read('.env.example'), environmentExample(), stale('.env.example'))
})

test('a Node.js flag or runtime variable the page cannot explain stops it, naming the file to explain it in', () => {
  const shipped = deployment()
  assert.throws(() => configurationPage({ ...shipped, nodeArgs: [...shipped.nodeArgs, '--stack-size=2000'] }),
    { message: 'the Deployment sets --stack-size, which dev/configuration-docs.ts does not explain: add it to NODE_FLAG_REASONS' })
  assert.throws(() => configurationPage({ ...shipped, runtimeEnv: { ...shipped.runtimeEnv, MALLOC_TOP_PAD_: '0' } }),
    { message: 'the Deployment sets MALLOC_TOP_PAD_, which dev/configuration-docs.ts does not explain: add it to RUNTIME_ENV_REASONS' })
})

test('the README\'s configuration table is what `npm run generate` writes', (t) => {
  const readme = read('README.md')
  if (!readme.includes(README_TABLE_START)) {
    t.skip(`README.md has no ${README_TABLE_START} marker, so no table to check`)
    return
  }
  assert.equal(readme, withReadmeTable(readme), stale('README.md\'s configuration table'))
})

test('the defaults .env.example shows are the defaults the server takes', () => {
  const env = Object.fromEntries(environmentExample().split('\n').flatMap((line) => {
    const match = /^# ([A-Z][A-Z0-9_]*)=(.*)$/.exec(line)
    const name = match?.[1] ?? ''
    return match !== null && variables().some(([variable, schema]) => String(variable) === name && schema.default !== undefined) ? [[name, match[2]]] : []
  }))
  assert.equal(Object.keys(env).length, variables().filter(([, schema]) => schema.default !== undefined).length)
  assert.deepEqual(loadConfig(env), loadConfig({}))
})

/** The variable names a source file reads as `env.NAME`, `env['NAME']` or `settings.NAME`. */
function namesRead (text: string): string[] {
  return [...text.matchAll(/\b(?:env|settings)(?:\.|\[')([A-Z][A-Z0-9_]+)/g)].map((match) => match[1] as string)
}

test('every variable the server reads is in the configuration schema', () => {
  const files = readdirSync(join(root, 'hooks'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'))
  const known = new Set<string>(variables().map(([name]) => name))
  const unknown = files.flatMap((file) => namesRead(read(join('hooks', file))).filter((name) => !known.has(name)).map((name) => `${name} (hooks/${file})`))
  assert.deepEqual(unknown, [])
})
