import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Controller } from '../hooks/framework/controller.js'
import { builtInOwner } from '../hooks/framework/built-in-resources.js'
import { englishPlural } from '../hooks/framework/custom-resource.js'
import { CommandError, parseCommand, type CommandIo } from './command.js'
import { generate } from './generate.js'
import { newFixture } from './new-fixture.js'

/**
 * npm run new-controller -- <name>
 * Adds a working CompositeController `<name>` (one ConfigMap per parent) with everything around it: its folder under
 * hooks/, its registration, its manifests and example, and two fixtures (a first sync, and the steady state after
 * it) with their golden answers. Then make it yours: docs/writing-a-controller.md.
 */

const RESERVED = ['break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default', 'delete', 'do', 'else', 'enum', 'export', 'extends', 'false', 'finally', 'for', 'function', 'if', 'import', 'in', 'instanceof', 'new', 'null', 'return', 'super', 'switch', 'this', 'throw', 'true', 'try', 'typeof', 'var', 'void', 'while', 'with', 'let', 'static', 'yield', 'await', 'implements', 'interface', 'package', 'private', 'protected', 'public']

/** The scaffold's three files, for a controller `name` of kind `kind` (its variable `camel`), served as `plural`. */
function scaffold (name: string, kind: string, camel: string, group: string, version: string, plural: string): Record<string, string> {
  const resourceTs = `import { Type, type Static } from '@sinclair/typebox'
import { customResource } from '../framework/index.js'

// Every string has a maxLength and every list a maxItems, chosen from what the field holds: from them
// test/answer-bounds.test.ts computes the largest answer a ${kind} can ask for, which must stay within the answer budget.
// A field with a pattern gets an example its pattern admits: docs/writing-a-controller.md shows how.
export const ${kind}SpecSchema = Type.Object({
  message: Type.String({ minLength: 1, maxLength: 1024, default: 'hello', description: 'What the ConfigMap holds.' })
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
  return { 'resource.ts': resourceTs, 'sync.ts': syncTs, 'index.ts': indexTs }
}

/**
 * `npm run new-controller` over the registered `controllers`, writing into `root` (the repository); what it does, on
 * `io.stdout`. The generated files and the fixtures come from the project's own tools, given the new controller.
 */
export async function newController (args: string[], controllers: readonly Controller[], root: string, io: CommandIo): Promise<void> {
  const { positionals: [name = ''] } = parseCommand(args, {
    usage: `usage: npm run new-controller -- <name>   (lowercase letters, digits and '-', such as config-copy)
  Scaffolds an operator of your own under hooks/<name>/: its resource, hook, example, fixtures, generated manifests
  and docs page, registered in hooks/controllers.ts (docs/writing-a-controller.md).`,
    options: {},
    positionals: [1, 1]
  })
  if (!/^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$/.test(name)) {
    throw new CommandError(`${JSON.stringify(name)} cannot name a controller: use at most 40 lowercase letters, digits and '-', starting with a letter (it becomes a URL segment and a Kubernetes name)`)
  }
  if (existsSync(join(root, 'hooks', name))) throw new CommandError(`hooks/${name}/ exists already: choose another name`)

  const words = name.split('-')
  const kind = words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')
  const camel = kind.charAt(0).toLowerCase() + kind.slice(1)
  const group = 'example.com'
  const version = 'v1alpha1'
  if (RESERVED.includes(camel)) throw new CommandError(`${JSON.stringify(name)} cannot name a controller: ${camel} is a reserved word of TypeScript, and the scaffold names the controller's variable with it`)
  const plural = englishPlural(kind.toLowerCase())
  for (const [what, value] of [['singular', kind.toLowerCase()], ['plural', plural]] as const) {
    const owner = builtInOwner(value)
    if (owner !== undefined) throw new CommandError(`${JSON.stringify(name)} cannot name a controller: its resource's ${what} ${JSON.stringify(value)} is ${owner}, a built-in Kubernetes resource, and kubectl would take one for the other: choose another name`)
  }
  const taken = controllers.find((controller) => controller.name === name || (controller.resource.group === group && controller.resource.plural === plural))
  if (taken !== undefined) throw new CommandError(`${taken.name} is registered already, with the resource ${taken.resource.plural}.${taken.resource.group}: choose another name`)

  const registryPath = join(root, 'hooks', 'controllers.ts')
  const registry = await readFile(registryPath, 'utf8')
  const list = /(export const controllers: readonly Controller\[\] = \[[^\]]*)\]/
  const lastImport = registry.lastIndexOf('\nimport ')
  if (!list.test(registry) || lastImport === -1) throw new CommandError(`hooks/controllers.ts no longer has the shape this command edits: import ${camel} from './${name}/index.js' and add it to the list by hand`)

  for (const [file, content] of Object.entries(scaffold(name, kind, camel, group, version, plural))) {
    await mkdir(join(root, 'hooks', name), { recursive: true })
    await writeFile(join(root, 'hooks', name, file), content)
    io.stdout(`wrote hooks/${name}/${file}\n`)
  }
  const importEnd = registry.indexOf('\n', lastImport + 1) + 1
  await writeFile(registryPath, `${registry.slice(0, importEnd)}import { ${camel} } from './${name}/index.js'\n${registry.slice(importEnd)}`.replace(list, `$1, ${camel}]`))
  io.stdout(`registered ${camel} in hooks/controllers.ts\n`)

  // The registry as the edit above left it: the controllers it had, and the new one last.
  const added = (await import(pathToFileURL(join(root, 'hooks', name, 'index.ts')).href) as Record<string, Controller>)[camel]
  if (added === undefined) throw new CommandError(`hooks/${name}/index.ts does not export ${camel}`)
  const registered = [...controllers, added]
  await generate(registered, root, io)
  await newFixture([name, 'first-sync'], registered, root, io)
  await newFixture([name, 'steady-state', '--after', 'first-sync'], registered, root, io)
  io.stdout(`\n${kind} is served at /${name}/sync. After each edit, \`npm run check -- ${name}\` says what npm test would say of it; make it yours: docs/writing-a-controller.md.\n`)
}
