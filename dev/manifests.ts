import type { TSchema } from '@sinclair/typebox'
import { stringify } from 'yaml'
import { hookNames, type Controller, type HookName } from '../hooks/framework/controller.js'
import { WEBHOOK_TIMEOUT_SECONDS } from '../hooks/framework/wire/webhook.js'
import { celString, type ApplyRule, type CustomResource } from '../hooks/framework/custom-resource.js'
import { answersFromRequestAlone } from '../hooks/http/etag.js'

/**
 * Generated manifests: each controller's CRD (from the same TypeBox schemas that validate the hooks) and its
 * Metacontroller CompositeController or DecoratorController. `npm run generate` writes them; a test fails when
 * the committed files differ.
 */

export const HOOK_SERVICE = { name: 'metacontroller-hooks', namespace: 'metacontroller-hooks', port: 80 }
const PART_OF = { 'app.kubernetes.io/part-of': 'metacontroller-hooks' }

type JsonSchema = Record<string, unknown>

/** TypeBox's JSON Schema as a Kubernetes structural schema: enums instead of const unions, no patternProperties. */
export function structural (schema: TSchema | JsonSchema): JsonSchema {
  const source = schema as JsonSchema
  const anyOf = source.anyOf as JsonSchema[] | undefined
  if (anyOf !== undefined && anyOf.every((option) => 'const' in option)) {
    return { type: 'string', enum: anyOf.map((option) => option.const), ...pick(source, ['description', 'default']) }
  }
  const result: JsonSchema = {}
  for (const [key, value] of Object.entries(source)) {
    // errorMessage is the hook's own wording of a refusal (framework/spec.ts), which a CRD cannot carry.
    if (key === '$id' || key === 'const' || key === 'errorMessage') continue
    if (key === 'required') {
      // A field with a default is always present once the API server has applied it, so the schemas declare it
      // required (their static types are the spec the hooks see); the user need not write it.
      const properties = source.properties as Record<string, JsonSchema>
      const required = (value as string[]).filter((name) => !('default' in (properties[name] ?? {})))
      if (required.length > 0) result.required = required
    } else if (key === 'properties') {
      result.properties = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>).map(([name, property]) => [name, structural(property)]))
    } else if (key === 'patternProperties') {
      result.additionalProperties = structural(Object.values(value as Record<string, JsonSchema>)[0] ?? {})
    } else if (key === 'items' || key === 'additionalProperties') {
      result[key] = typeof value === 'object' ? structural(value as JsonSchema) : value
    } else if (key === 'anyOf' && source['x-kubernetes-int-or-string'] === true) {
      // The API server takes an int-or-string only as `anyOf: [{type: integer}, {type: string}]`, exactly: a bound of
      // one branch (the string's maxLength) is set beside it, where it applies to values of that type alone.
      result.anyOf = (value as JsonSchema[]).map(({ type }) => ({ type }))
      for (const { type: _type, ...bounds } of value as JsonSchema[]) Object.assign(result, bounds)
    } else if (key === 'anyOf') {
      result.anyOf = (value as JsonSchema[]).map(structural)
    } else {
      result[key] = value
    }
  }
  if (Object.keys(result).every((key) => key === 'description')) result['x-kubernetes-preserve-unknown-fields'] = true
  return result
}

function pick (source: JsonSchema, keys: string[]): JsonSchema {
  return Object.fromEntries(keys.filter((key) => key in source).map((key) => [key, source[key]]))
}

/**
 * The resource's name rule as CEL at the schema's root, the one place a rule sees `self.metadata.name` (a `fieldPath`
 * cannot point there: the API server reports the rule on the object): it then refuses at apply time a name the hook
 * would refuse (hooks/framework/parent.ts), for the same reason.
 */
export function nameValidations (resource: CustomResource): ApplyRule[] {
  const { name, kind } = resource
  if (name === undefined) return []
  const rules: ApplyRule[] = [{ rule: `self.metadata.name.size() <= ${name.maxLength}`, message: `a ${kind} name holds at most ${name.maxLength} characters, because ${name.why}` }]
  if (name.pattern !== undefined) {
    rules.push({ rule: `self.metadata.name.matches(${celString(name.pattern.regex)})`, message: `a ${kind} name must ${name.pattern.meaning}, because ${name.why}` })
  }
  return rules
}

export function customResourceDefinition (resource: CustomResource): JsonSchema {
  const names = nameValidations(resource)
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${resource.plural}.${resource.group}`, labels: PART_OF },
    spec: {
      group: resource.group,
      scope: 'Namespaced',
      names: {
        kind: resource.kind,
        listKind: resource.listKind,
        plural: resource.plural,
        singular: resource.singular,
        ...(resource.shortNames === undefined ? {} : { shortNames: resource.shortNames }),
        ...(resource.categories === undefined ? {} : { categories: resource.categories })
      },
      versions: [{
        name: resource.version,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: resource.printerColumns,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            ...(names.length === 0 ? {} : { 'x-kubernetes-validations': names }),
            required: ['spec'],
            properties: {
              spec: structural(resource.spec),
              status: structural(resource.statusSchema)
            }
          }
        }
      }]
    }
  }
}

/**
 * Metacontroller's ETag cache for the hooks whose answer is a function of the request (hooks/http/etag.ts); none for
 * PostgresWriter, whose periodic resync must reach the database to repair a row changed behind its back.
 *
 * The composites have no resyncPeriodSeconds: an unchanged parent is called again at each relist (Metacontroller's
 * --cache-flush-interval, 30 min). An entry expires cacheTimeoutSeconds after the 200 that stored it (a 304 does not
 * renew it): 6,300 s is 3.5 relists, so three relists in four are answered with 304 and the fourth renews the entry,
 * and an expiry never coincides with a relist, where it could fall between Metacontroller sending If-None-Match and
 * reading the 304 (that sync would fail once: "cannot find cached response"). The cache holds one answer per parent
 * (about 1 MB for a 2,000-pod PodSet); a deleted parent's is swept within cacheCleanupSeconds after it expires.
 * Always both: Metacontroller dereferences cacheCleanupSeconds whenever cacheTimeoutSeconds is set.
 */
export function webhookEtag (controller: Controller): JsonSchema | undefined {
  return answersFromRequestAlone(controller) ? { enabled: true, cacheTimeoutSeconds: 6300, cacheCleanupSeconds: 600 } : undefined
}

function webhook (controller: Controller, hook: HookName): JsonSchema {
  const etag = webhookEtag(controller)
  return {
    version: 'v2',
    webhook: { service: HOOK_SERVICE, path: `/${controller.name}/${hook}`, timeout: `${WEBHOOK_TIMEOUT_SECONDS}s`, ...(etag === undefined ? {} : { etag }) }
  }
}

export function metacontrollerManifest (controller: Controller): JsonSchema {
  const { resource } = controller
  const hooks = Object.fromEntries(hookNames(controller).map((hook) => [hook, webhook(controller, hook)]))
  const resync = controller.resyncPeriodSeconds === undefined ? {} : { resyncPeriodSeconds: controller.resyncPeriodSeconds }
  const parent = { apiVersion: resource.apiVersion, resource: resource.plural }
  if (controller.type === 'decorator') {
    return {
      apiVersion: 'metacontroller.k8s.io/v1alpha1',
      kind: 'DecoratorController',
      metadata: { name: controller.name, labels: PART_OF },
      spec: { resources: [parent], ...resync, hooks }
    }
  }
  return {
    apiVersion: 'metacontroller.k8s.io/v1alpha1',
    kind: 'CompositeController',
    metadata: { name: controller.name, labels: PART_OF },
    spec: {
      generateSelector: true,
      parentResource: parent,
      childResources: controller.childResources.map(({ apiVersion, resource: plural, updateStrategy }) => ({ apiVersion, resource: plural, updateStrategy: { method: updateStrategy } })),
      ...resync,
      hooks
    }
  }
}

const header = '# Generated by `npm run generate` from the TypeBox schemas in hooks/: edit those, not this file.\n'

/** The example resource of a controller whose resource has an `exampleSpec`, named after the controller. */
export function exampleResource (controller: Controller): Record<string, unknown> | undefined {
  const { resource } = controller
  if (resource.exampleSpec === undefined) return undefined
  return { apiVersion: resource.apiVersion, kind: resource.kind, metadata: { name: `${controller.name}-sample` }, spec: resource.exampleSpec }
}

export const PLAN_IDENTITY = { name: 'metacontroller-hooks-plan', namespace: HOOK_SERVICE.namespace }

/**
 * What `npm run plan` reads, and nothing more: get and list on the controllers' CompositeControllers and
 * DecoratorControllers, their parents and their children (discovery is open to every authenticated user). One rule
 * per API group.
 */
export function planClusterRole (controllers: readonly Controller[]): JsonSchema {
  const byGroup = new Map<string, Set<string>>([['metacontroller.k8s.io', new Set(['compositecontrollers', 'decoratorcontrollers'])]])
  const add = (apiVersion: string, plural: string): void => {
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''
    let plurals = byGroup.get(group)
    if (plurals === undefined) byGroup.set(group, plurals = new Set())
    plurals.add(plural)
  }
  for (const controller of controllers) {
    add(controller.resource.apiVersion, controller.resource.plural)
    if (controller.type === 'composite') for (const child of controller.childResources) add(child.apiVersion, child.resource)
  }
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: PLAN_IDENTITY.name, labels: PART_OF },
    rules: [...byGroup].sort(([a], [b]) => a.localeCompare(b)).map(([group, plurals]) => ({ apiGroups: [group], resources: [...plurals].sort(), verbs: ['get', 'list'] }))
  }
}

function planManifests (controllers: readonly Controller[]): Array<[string, JsonSchema]> {
  const { name, namespace } = PLAN_IDENTITY
  return [
    ['service-account.yaml', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels: PART_OF } }],
    ['cluster-role.yaml', planClusterRole(controllers)],
    ['cluster-role-binding.yaml', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels: PART_OF },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }]
    }]
  ]
}

/** Every generated file: path under manifests/ → content. */
export function generatedManifests (controllers: readonly Controller[]): Map<string, string> {
  const files = new Map<string, string>()
  for (const controller of controllers) {
    files.set(`crds/${controller.name}.yaml`, header + stringify(customResourceDefinition(controller.resource), { lineWidth: 0, aliasDuplicateObjects: false }))
    files.set(`controllers/${controller.name}.yaml`, header + stringify(metacontrollerManifest(controller), { lineWidth: 0, aliasDuplicateObjects: false }))
    const example = exampleResource(controller)
    if (example !== undefined) files.set(`examples/${controller.name}.yaml`, `# Generated by \`npm run generate\` from exampleSpec in hooks/${controller.name}/resource.ts: edit that, not this file.\n${stringify(example)}`)
  }
  for (const folder of ['crds', 'controllers']) {
    const kustomization = { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: controllers.map((c) => `${c.name}.yaml`) }
    files.set(`${folder}/kustomization.yaml`, header + stringify(kustomization))
  }
  const plan = planManifests(controllers)
  for (const [file, manifest] of plan) files.set(`plan/${file}`, header + stringify(manifest))
  const kustomization = { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: ['../namespace', ...plan.map(([file]) => file)] }
  files.set('plan/kustomization.yaml', `${header}# The identity \`npm run plan\` needs: get and list only (docs/plan.md). Not part of manifests/: apply it on its own.\n${stringify(kustomization)}`)
  return files
}
