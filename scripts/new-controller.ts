import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { controllers } from '../hooks/controllers.js'
import { englishPlural } from '../hooks/framework/custom-resource.js'

/**
 * npm run new-controller -- <name>
 * Adds a working CompositeController `<name>` (one ConfigMap per parent) with everything around it: its folder under
 * hooks/, its registration, its manifests and example, and two fixtures (a first sync, and the steady state after
 * it) with their golden answers. `npm test` passes right after it. Then make it yours: docs/writing-a-controller.md.
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
const RESERVED = ['break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default', 'delete', 'do', 'else', 'enum', 'export', 'extends', 'false', 'finally', 'for', 'function', 'if', 'import', 'in', 'instanceof', 'new', 'null', 'return', 'super', 'switch', 'this', 'throw', 'true', 'try', 'typeof', 'var', 'void', 'while', 'with', 'let', 'static', 'yield', 'await', 'implements', 'interface', 'package', 'private', 'protected', 'public']
if (RESERVED.includes(camel)) fail(`${JSON.stringify(name)} cannot name a controller: ${camel} is a reserved word of TypeScript, and the scaffold names the controller's variable with it`)
const plural = englishPlural(kind.toLowerCase())
const taken = controllers.find((controller) => controller.name === name || (controller.resource.group === group && controller.resource.plural === plural))
if (taken !== undefined) fail(`${taken.name} is registered already, with the resource ${taken.resource.plural}.${taken.resource.group}: choose another name`)

const resourceTs = `import { Type, type Static } from '@sinclair/typebox'
import { customResource } from '../framework/index.js'

export const ${kind}SpecSchema = Type.Object({
  message: Type.String({ minLength: 1, default: 'hello', description: 'What the ConfigMap holds.' })
})
export type ${kind}Spec = Static<typeof ${kind}SpecSchema>

/**
 * The ${kind} resource. Its CRD, its Metacontroller controller and manifests/examples/${name}.yaml are generated from
 * this (\`npm run generate\`). It is called ${plural} (\`kubectl get ${plural}\`): \`plural\`, \`singular\`, \`shortNames\` and
 * \`categories\` set here name it otherwise.
 */
export const ${camel}Resource = customResource({
  group: '${group}',
  version: '${version}',
  kind: '${kind}',
  name: { maxLength: 63, why: 'its ConfigMap carries it in a label' },
  spec: ${kind}SpecSchema,
  status: {
    configMap: Type.Optional(Type.String({ description: 'Name of the ConfigMap.' }))
  },
  printerColumns: [{ name: 'Message', type: 'string', jsonPath: '.spec.message' }],
  exampleSpec: { message: 'hello' }
})

export type ${kind}Status = Static<typeof ${camel}Resource.statusSchema>
`

const syncTs = `import type { ConfigMap } from 'kubernetes-types/core/v1.js'
import { observedByName, parentStatus, recommendedLabels, type CompositeRequest, type CompositeResponse, type HookContext, type Readiness } from '../framework/index.js'
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

const indexTs = `import type { CompositeController } from '../framework/index.js'
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

async function write (path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true })
  await writeFile(join(root, path), content)
  process.stdout.write(`wrote ${path}\n`)
}

await write(`hooks/${name}/resource.ts`, resourceTs)
await write(`hooks/${name}/sync.ts`, syncTs)
await write(`hooks/${name}/index.ts`, indexTs)

const registryPath = join(root, 'hooks', 'controllers.ts')
const registry = await readFile(registryPath, 'utf8')
const list = /(export const controllers: readonly Controller\[\] = \[[^\]]*)\]/
const lastImport = registry.lastIndexOf('\nimport ')
if (!list.test(registry) || lastImport === -1) fail(`hooks/controllers.ts no longer has the shape this script edits: import ${camel} from './${name}/index.js' and add it to the list by hand`)
const importEnd = registry.indexOf('\n', lastImport + 1) + 1
await writeFile(registryPath, `${registry.slice(0, importEnd)}import { ${camel} } from './${name}/index.js'\n${registry.slice(importEnd)}`.replace(list, `$1, ${camel}]`))
process.stdout.write(`registered ${camel} in hooks/controllers.ts\n`)

/** Runs a script of the project's own, as a person would after the steps above; its output shows. */
function run (args: string[]): void {
  const result = spawnSync(process.execPath, ['--import', 'tsx', ...args], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) fail(`node ${args.join(' ')} failed (exit ${result.status})`)
}
run(['scripts/generate.ts'])
run(['scripts/new-fixture.ts', name, 'first-sync'])
run(['scripts/new-fixture.ts', name, 'steady-state', '--after', 'first-sync'])
process.stdout.write(`\n${kind} is served at /${name}/sync, and npm test passes. Now make it yours: docs/writing-a-controller.md.\n`)
