import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { stringify } from 'yaml'
import type { Controller } from '../hooks/controller.js'
import { metacontrollerManifest } from './manifests.js'

/**
 * npm run new-controller -- <name>
 * Adds a working CompositeController `<name>` (one ConfigMap per parent) with everything around it: its folder under
 * hooks/, its registration, a fixture with its golden answer, a test, an example resource and its manifests. Then
 * make it yours: see "Add a fifth controller" in the README.
 */

const root = join(import.meta.dirname, '..')

function fail (message: string): never {
  process.stderr.write(`${message}\n`)
  process.exit(1)
}

const [name, ...rest] = process.argv.slice(2)
if (name === undefined || rest.length > 0) fail('usage: npm run new-controller -- <name>   (a DNS label such as config-copy)')
if (!/^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$/.test(name)) {
  fail(`${JSON.stringify(name)} cannot name a controller: use at most 40 lowercase letters, digits and '-', starting with a letter (it becomes a URL segment and a Kubernetes name)`)
}
if (existsSync(join(root, 'hooks', name))) fail(`hooks/${name}/ exists already: choose another name`)

const words = name.split('-')
const kind = words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')
const camel = kind.charAt(0).toLowerCase() + kind.slice(1)
const group = 'example.com'
const version = 'v1alpha1'

const resourceTs = `import { Type, type Static } from '@sinclair/typebox'
import { customResource } from '../custom-resource.js'

export const ${kind}SpecSchema = Type.Object({
  message: Type.String({ minLength: 1, default: 'hello', description: 'What the ConfigMap holds.' })
})
export type ${kind}Spec = Static<typeof ${kind}SpecSchema>

export const ${camel}Resource = customResource({
  group: '${group}',
  version: '${version}',
  kind: '${kind}',
  name: { maxLength: 63, why: 'its ConfigMap carries it in a label' },
  spec: ${kind}SpecSchema,
  status: {
    configMap: Type.Optional(Type.String({ description: 'Name of the ConfigMap.' }))
  },
  printerColumns: [{ name: 'Message', type: 'string', jsonPath: '.spec.message' }]
})

export type ${kind}Status = Static<typeof ${camel}Resource.statusSchema>
`

const syncTs = `import type { ConfigMap } from 'kubernetes-types/core/v1.js'
import type { HookContext } from '../controller.js'
import { parentStatus, type Readiness } from '../parent.js'
import { observedByName, recommendedLabels } from '../wire/objects.js'
import type { CompositeRequest, CompositeResponse } from '../wire/schemas.js'
import type { ${camel}Resource, ${kind}Status } from './resource.js'

/** The pure core of ${kind}: one ConfigMap that holds the spec's message, and Ready once it does. */
export function sync${kind} (request: CompositeRequest, { parent, now }: HookContext<typeof ${camel}Resource>): CompositeResponse {
  const spec = parent.spec()
  const name = \`\${parent.name}-${name}\`
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      ...(parent.namespace === undefined ? {} : { namespace: parent.namespace }),
      labels: recommendedLabels('${name}', parent.name, 'config')
    },
    data: { message: spec.message }
  }
  const observed = observedByName<ConfigMap>(request.children, 'ConfigMap', 'v1').get(name)
  const readiness: Readiness = observed?.data?.message === spec.message
    ? { ready: true, reason: 'ConfigMapCurrent', message: \`ConfigMap \${name} holds the message\` }
    : { ready: false, reason: 'ConfigMapPending', message: \`ConfigMap \${name} is being written\` }
  const status: ${kind}Status = parentStatus(parent, now, { configMap: name }, readiness)
  return { status, children: [configMap] }
}
`

const indexTs = `import type { CompositeController } from '../controller.js'
import { ${camel}Resource } from './resource.js'
import { sync${kind} } from './sync.js'

/** ${kind}: a ConfigMap per parent, holding its message. */
export const ${camel}: CompositeController<typeof ${camel}Resource> = {
  type: 'composite',
  name: '${name}',
  resource: ${camel}Resource,
  needs: [],
  childResources: [{ apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', updateStrategy: 'InPlace' }],
  hooks: { sync: sync${kind} }
}
`

const testTs = `import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ${camel} } from '../../hooks/${name}/index.js'
import { build } from '../helpers/app.js'
import { fixture, fixtureNames } from '../helpers/fixtures.js'
import { assertGolden } from '../helpers/golden.js'

test('every fixture gets its golden answer', async (t) => {
  const { app } = await build(t, { controllers: [${camel}] })
  for (const name of fixtureNames('${name}')) {
    const response = await app.inject({ method: 'POST', url: '/${name}/sync', payload: fixture('${name}', name) })
    assert.equal(response.statusCode, 200, response.body)
    assertGolden(response.json(), '${name}', name)
  }
})

test('the ConfigMap holds the message, and the parent is Ready once Metacontroller has applied it', async (t) => {
  const { app } = await build(t, { controllers: [${camel}] })
  const request = fixture('${name}', 'first-sync')
  const first = (await app.inject({ method: 'POST', url: '/${name}/sync', payload: request })).json()
  const [configMap] = first.children
  assert.equal(configMap.data.message, request.parent.spec.message)
  const applied = { ...request, parent: { ...request.parent, status: first.status }, children: { 'ConfigMap.v1': { [\`default/\${configMap.metadata.name}\`]: configMap } } }
  const second = (await app.inject({ method: 'POST', url: '/${name}/sync', payload: applied })).json()
  assert.equal(second.status.conditions[0].status, 'True')
  assert.deepEqual(second.children, first.children)
})
`

const example = { apiVersion: `${group}/${version}`, kind, metadata: { name: `${name}-sample` }, spec: { message: 'hello' } }

async function write (path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true })
  await writeFile(join(root, path), content)
  process.stdout.write(`wrote ${path}\n`)
}

await write(`hooks/${name}/resource.ts`, resourceTs)
await write(`hooks/${name}/sync.ts`, syncTs)
await write(`hooks/${name}/index.ts`, indexTs)
await write(`test/${name}/sync.test.ts`, testTs)
await write(`manifests/examples/${name}.yaml`, stringify(example))

const registryPath = join(root, 'hooks', 'controllers.ts')
const registry = await readFile(registryPath, 'utf8')
const list = /(export const controllers: readonly Controller\[\] = \[[^\]]*)\]/
const lastImport = registry.lastIndexOf('\nimport ')
if (!list.test(registry) || lastImport === -1) fail(`hooks/controllers.ts no longer has the shape this script edits: import ${camel} from './${name}/index.js' and add it to the list by hand`)
const importEnd = registry.indexOf('\n', lastImport + 1) + 1
await writeFile(registryPath, `${registry.slice(0, importEnd)}import { ${camel} } from './${name}/index.js'\n${registry.slice(importEnd)}`.replace(list, `$1, ${camel}]`))
process.stdout.write(`registered ${camel} in hooks/controllers.ts\n`)

const controller = (await import(join(root, 'hooks', name, 'index.ts')) as Record<string, Controller>)[camel] as Controller
const request = {
  controller: { ...metacontrollerManifest(controller), status: {} },
  parent: { ...example, metadata: { ...example.metadata, namespace: 'default', uid: '00000000-0000-4000-8000-000000000001', generation: 1 } },
  children: { 'ConfigMap.v1': {} },
  related: {},
  finalizing: false
}
await write(`test/fixtures/${name}/first-sync.json`, `${JSON.stringify(request, null, 2)}\n`)

/** Runs a step of the project's own, as a person would after the ones above; its output shows only if it fails. */
function run (done: string, args: string[], env: Record<string, string> = {}): void {
  const result = spawnSync(process.execPath, ['--import', 'tsx', ...args], { cwd: root, encoding: 'utf8', env: { ...process.env, ...env } })
  if (result.status !== 0) fail(`${result.stdout}${result.stderr}node ${args.join(' ')} failed (exit ${result.status})`)
  process.stdout.write(`${done}\n`)
}
run(`wrote manifests/crds/${name}.yaml, manifests/controllers/${name}.yaml and their kustomizations (npm run generate)`, ['scripts/generate.ts'])
run(`wrote test/fixtures/${name}/first-sync.expected.json (UPDATE_GOLDEN=1)`, ['--test', `test/${name}/sync.test.ts`], { UPDATE_GOLDEN: '1' })
process.stdout.write(`\n${kind} is served at /${name}/sync. Now make it yours: README, "Add a fifth controller", from step 2.\n`)
