import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import type { Controller } from '../hooks/framework/controller.js'
import { kubernetesTime } from '../hooks/framework/wire/conditions.js'
import type { CompositeRequest, KubernetesObject, ObjectMap } from '../hooks/framework/wire/schemas.js'
import { goJson } from '../hooks/framework/wire/apply.js'
import { customResource } from './api-server/custom-resource.js'
import { addSeconds, hashNumber, uidFor } from './api-server/encoding.js'
import { afterSync, syncRequest } from './api-server/metacontroller.js'
import { CommandError, parseCommand, type CommandIo } from './command.js'
import { NOW, syncAnswer } from './hook-answer.js'
import { observedChildren, readObjects } from './observed-children.js'

/**
 * npm run new-fixture -- <controller> <case> [--resource <custom-resource.yaml>] [--after <case> | --observed <children.yaml>]
 * Writes test/fixtures/<controller>/<case>.json, a sync request as Metacontroller v2 sends it for the custom resource
 * (by default the controller's example), and <case>.expected.json, the hook's answer at the tests' clock, to be read
 * before it is committed. The children are none, those of --observed (a file, or `kubectl get -o yaml` output), or,
 * with --after, those the cluster holds once Metacontroller has applied the answer to an earlier case, whose parent
 * then carries the status written and, given --resource, the new spec as its next generation.
 */

const USAGE = `usage: npm run new-fixture -- <controller> <case> [--resource <custom-resource.yaml>] [--after <case> | --observed <children.yaml>]
  Writes test/fixtures/<controller>/<case>.json, a sync request as Metacontroller sends it, and its expected answer.
  --resource: the parent (default the controller's example); --observed: its children (a file, or - for kubectl get
  -o yaml output on standard input); --after: the children once Metacontroller has applied the answer to that case.`
/** When `kubectl apply` created the parents, and when Metacontroller applied an answer: an hour before, and a second after, the tests' clock. */
const CREATED = addSeconds(kubernetesTime(NOW), -3600)
const APPLIED = addSeconds(CREATED, 3601)

type Composite = Extract<Controller, { type: 'composite' }>

const OPTIONS = { resource: { type: 'string' }, after: { type: 'string' }, observed: { type: 'string' } } as const

/** The spec as `kubectl apply` wrote it: in its annotation, for a parent built by this tool or read from a cluster. */
function appliedSpec (object: KubernetesObject): unknown {
  const annotation = object.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']
  try {
    return annotation === undefined ? object.spec : (JSON.parse(annotation) as KubernetesObject).spec ?? object.spec
  } catch {
    return object.spec
  }
}

/** The spec as the API server stores it (the CRD's defaults applied), or as written when the hook cannot read it. */
function storedSpec (controller: Composite, spec: unknown): unknown {
  try {
    return controller.resource.parseSpec(spec)
  } catch {
    return spec
  }
}

/**
 * `npm run new-fixture` over the registered `controllers`, writing under `root` (the repository): the fixture and its
 * answer, and one line on `io.stdout` that says so.
 */
export async function newFixture (args: string[], controllers: readonly Controller[], root: string, io: CommandIo): Promise<void> {
  const { positionals: [name = '', caseName = ''], values } = parseCommand(args, { usage: USAGE, options: OPTIONS, positionals: [2, 2] })
  const { resource: resourcePath, after, observed: observedPath } = values
  if (after !== undefined && observedPath !== undefined) throw new CommandError(`give --after or --observed, not both: ${USAGE.split('\n')[0] ?? ''}`, 2)
  const found = controllers.find((c) => c.name === name)
  if (found === undefined) throw new CommandError(`no controller is named ${name}: the registered ones are ${controllers.map((c) => c.name).join(', ')}`)
  if (found.type !== 'composite' || found.needs.length > 0) {
    throw new CommandError(`${name} ${found.type === 'composite' ? `needs ${found.needs.join(' and ')}` : 'is a DecoratorController'}, so its fixtures cannot be answered offline: write them as test/fixtures/postgres-writer/ shows`)
  }
  const controller: Composite = found
  for (const [what, value] of [['case', caseName], ['--after', after]]) {
    if (value !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(value)) throw new CommandError(`${what} ${JSON.stringify(value)} cannot name a fixture: use lowercase letters, digits and '-' (scale-down)`)
  }
  const folder = join(root, 'test', 'fixtures', name)

  const answerTo = async (request: CompositeRequest): Promise<{ statusCode: number, body: any }> => await syncAnswer(controller, request, () => NOW)

  let previous: { request: CompositeRequest, answer: any } | undefined
  if (after !== undefined) {
    const path = join(folder, `${after}.json`)
    if (!existsSync(path)) throw new CommandError(`--after ${after}: test/fixtures/${name}/${after}.json does not exist`)
    const request = JSON.parse(await readFile(path, 'utf8')) as CompositeRequest
    const { statusCode, body } = await answerTo(request)
    if (statusCode !== 200) throw new CommandError(`--after ${after}: the hook answers ${statusCode} (${String(body.message)}), so Metacontroller applies nothing`)
    previous = { request, answer: body }
  }
  const example = join('manifests', 'examples', `${name}.yaml`)
  const [written] = resourcePath !== undefined
    ? await readObjects(io, resourcePath)
    : previous === undefined ? await readObjects({ ...io, cwd: resolve(root) }, example) : [previous.request.parent]
  if (written === undefined) throw new CommandError(`${resourcePath ?? example} holds no object`)
  if (written.apiVersion !== controller.resource.apiVersion || written.kind !== controller.resource.kind) {
    throw new CommandError(`${resourcePath ?? example} holds a ${written.apiVersion} ${written.kind}, and ${name} serves ${controller.resource.apiVersion} ${controller.resource.kind}`)
  }

  let parent: KubernetesObject
  let children: ObjectMap = {}
  if (written.metadata.uid !== undefined && previous === undefined) {
    // Read from a cluster: as it is.
    parent = { ...written, metadata: { ...written.metadata, namespace: written.metadata.namespace ?? 'default' } }
  } else {
    const before = previous?.request.parent
    const namespace = before?.metadata.namespace ?? written.metadata.namespace ?? 'default'
    const parentName = String(before?.metadata.name ?? written.metadata.name)
    const spec = storedSpec(controller, written.spec)
    const generation = before === undefined ? 1 : Number(before.metadata.generation ?? 1) + (isDeepStrictEqual(spec, before.spec) ? 0 : 1)
    const status = previous === undefined ? written.status : { ...previous.answer.status, observedGeneration: before?.metadata.generation }
    const uid = before?.metadata.uid ?? uidFor(`uid:${namespace}/${parentName}`)
    parent = customResource({
      apiVersion: written.apiVersion,
      kind: written.kind,
      name: parentName,
      namespace,
      uid,
      resourceVersion: String(1000 + hashNumber(`${uid}/${generation}/${goJson(status ?? null)}`, 9000)),
      createdAt: (before?.metadata as { creationTimestamp?: string } | undefined)?.creationTimestamp ?? CREATED,
      spec,
      appliedSpec: appliedSpec(written),
      labels: written.metadata.labels ?? before?.metadata.labels,
      generation,
      status,
      statusWrittenAt: APPLIED,
      deletionTimestamp: written.metadata.deletionTimestamp
    })
  }
  if (previous !== undefined) {
    children = afterSync(previous.request, previous.answer, { time: APPLIED, resourceVersion: 1000 + hashNumber(`${name}/${caseName}`, 9000) }).children
  } else if (observedPath !== undefined) {
    children = observedChildren(controller, written, await readObjects(io, observedPath), observedPath)
  }

  const request = syncRequest(controller, parent, children)
  const { statusCode, body } = await answerTo(request)
  const existed = existsSync(join(folder, `${caseName}.json`))
  await mkdir(folder, { recursive: true })
  await writeFile(join(folder, `${caseName}.json`), `${JSON.stringify(request, null, 2)}\n`)
  await writeFile(join(folder, `${caseName}.expected.json`), `${JSON.stringify(body, null, 2)}\n`)
  io.stdout(`${existed ? 'rewrote' : 'wrote'} test/fixtures/${name}/${caseName}.json, and its answer (${statusCode}) in ${caseName}.expected.json: read the answer before you commit it\n`)
}
