import { stringify } from 'yaml'
import type { Controller } from '../hooks/framework/controller.js'
import { CommandError, parseCommand, type CommandIo } from './command.js'
import { syncAnswer } from './hook-answer.js'
import { planSync, type ChildChange, type FieldChange, type Plan } from './metacontroller-apply.js'
import { metacontrollerManifest } from './manifests.js'
import { observedChildren, readObjects } from './observed-children.js'

/**
 * npm run -s render -- <cr.yaml> [--observed <children.yaml>] [--diff]
 * Prints, as YAML, what a composite's sync hook answers for a custom resource: no cluster, no database. With
 * --diff, what Metacontroller would do with that answer instead. (`-s` keeps npm's banner out of the output.)
 */

const RENDER = {
  usage: `usage: npm run -s render -- <custom-resource.yaml> [--observed <children.yaml>] [--diff]
  Prints, as YAML, what a composite's sync hook answers for a custom resource (- reads standard input), with no
  cluster and no database. --observed: the children the cluster holds (kubectl get -o yaml output). --diff: what
  Metacontroller would do with that answer instead.`,
  options: { observed: { type: 'string' }, diff: { type: 'boolean' } }
} as const

function parsed (args: string[]): { resourcePath: string, observedPath: string | undefined, diff: boolean } {
  const { values, positionals: [resourcePath = ''] } = parseCommand(args, { ...RENDER, positionals: [1, 1] })
  return { resourcePath, observedPath: values.observed, diff: values.diff === true }
}

/** `npm run render` over the registered `controllers`: the answer, or with --diff the plan, as YAML on `io.stdout`. */
export async function render (args: string[], controllers: readonly Controller[], io: CommandIo): Promise<void> {
  const { resourcePath, observedPath, diff } = parsed(args)
  const [parent] = await readObjects(io, resourcePath)
  if (parent === undefined) throw new CommandError(`${resourcePath} holds no object`)
  const controller = controllers.find(({ resource }) => parent.apiVersion === resource.apiVersion && parent.kind === resource.kind)
  if (controller === undefined) {
    throw new CommandError(`${parent.apiVersion} ${parent.kind} is not served here; render knows ${controllers.map((c) => `${c.resource.apiVersion} ${c.resource.kind}`).join(', ')}`)
  }
  if (controller.needs.length > 0) {
    throw new CommandError(`${parent.kind} needs ${controller.needs.join(' and ')}, so it has no offline answer: run \`npm start\` and curl /${controller.name}/sync with a fixture (see docs/render.md)`)
  }
  if (controller.type !== 'composite') {
    throw new CommandError(`render answers for CompositeControllers, and ${controller.name} is a DecoratorController: run \`npm start\` and curl /${controller.name}/sync with a fixture (see docs/render.md)`)
  }

  const namespace = parent.metadata.namespace ?? 'default'
  const request = {
    controller: metacontrollerManifest(controller),
    parent: {
      ...parent,
      metadata: { generation: 1, uid: '00000000-0000-0000-0000-000000000000', ...parent.metadata, namespace }
    },
    children: observedPath === undefined ? {} : observedChildren(controller, parent, await readObjects(io, observedPath), observedPath),
    related: {},
    finalizing: false
  }
  const { statusCode, body: answer } = await syncAnswer(controller, request, () => new Date())
  const refusal = `the hook answers ${statusCode} for ${parent.kind} ${namespace}/${String(parent.metadata.name)}: ${String(answer.message)}`
  const yaml = (value: unknown): string => stringify(value, { lineWidth: 0, aliasDuplicateObjects: false })
  if (!diff) {
    if (statusCode !== 200) throw new CommandError(refusal)
    io.stdout(yaml(answer))
  } else if (statusCode !== 200) {
    // Metacontroller keeps everything as it is after a failed hook call, and shows why on the parent.
    io.stdout(yaml({ errors: [`${refusal} Metacontroller changes nothing, and shows this in a SyncError event on the parent`] }))
  } else {
    io.stdout(yaml(planOutput(planSync(controller, request.parent, request.children, answer))))
  }
}

/** A field change as `field: { from, to }`; a side that has no value is left out. */
function fieldsOutput (fields: FieldChange[]): Record<string, unknown> {
  return Object.fromEntries(fields.map(({ field, from, to, note }) => [field, note ?? { ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) }]))
}

function changesOutput (changes: ChildChange[]): unknown[] {
  return changes.map(({ child, strategy, fields }) => ({ [child]: { strategy, fields: fieldsOutput(fields) } }))
}

/** The plan, its empty parts left out, each part under a name that says what Metacontroller does. */
function planOutput (plan: Plan): Record<string, unknown> {
  const parts: Record<string, unknown> = {
    errors: plan.errors,
    childrenUnmanaged: plan.childrenUnmanaged,
    delete: plan.delete,
    create: plan.create,
    update: changesOutput(plan.update),
    recreate: changesOutput(plan.recreate),
    leftAsIs: changesOutput(plan.leftAsIs),
    waitForDeletion: changesOutput(plan.waitForDeletion),
    beingDeleted: plan.beingDeleted,
    unchanged: plan.unchanged,
    status: plan.status.length === 0 ? 'unchanged' : fieldsOutput(plan.status)
  }
  return Object.fromEntries(Object.entries(parts).filter(([, value]) => value !== undefined && !(Array.isArray(value) && value.length === 0)))
}
