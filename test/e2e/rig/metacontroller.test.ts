import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { metacontrollerBuild, metacontrollerSupportsEndpointConfigs, metacontrollerSupportsHookV2 } from './metacontroller.js'

/** A controller CRD as Metacontroller ships it, cut down to the hooks' schema and, if given, endpointConfigs. */
function controllerCrd (plural: string, syncHook: Record<string, unknown>, endpointConfigs?: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.metacontroller.k8s.io` },
    spec: {
      versions: [{
        name: 'v1alpha1',
        schema: { openAPIV3Schema: { properties: { spec: { properties: { hooks: { properties: { sync: { properties: syncHook } } }, ...endpointConfigs === undefined ? {} : { endpointConfigs } } } } } }
      }]
    }
  })
}

const webhook = { webhook: { type: 'object' } }
const versioned = { version: { type: 'string', enum: ['v1', 'v2'] }, ...webhook }

function folder (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'e2e-mc-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

function crdsFile (dir: string, composite: Record<string, unknown>, decorator: Record<string, unknown>, endpointConfigs?: Record<string, unknown>): string {
  const file = join(dir, 'metacontroller-crds-v1.yaml')
  writeFileSync(file, `---\n${controllerCrd('compositecontrollers', composite, endpointConfigs)}\n---\n${controllerCrd('decoratorcontrollers', decorator, endpointConfigs)}\n`)
  return file
}

test('hook v2 is supported when both controller CRDs have a hooks version field', (t) => {
  const dir = folder(t)
  assert.equal(metacontrollerSupportsHookV2(crdsFile(dir, versioned, versioned)), true)
  assert.equal(metacontrollerSupportsHookV2(crdsFile(dir, webhook, webhook)), false)
  assert.equal(metacontrollerSupportsHookV2(crdsFile(dir, versioned, webhook)), false)
})

test('hook authentication is supported when both controller CRDs have endpointConfigs', (t) => {
  const dir = folder(t)
  assert.equal(metacontrollerSupportsEndpointConfigs(crdsFile(dir, versioned, versioned, { type: 'array' })), true)
  assert.equal(metacontrollerSupportsEndpointConfigs(crdsFile(dir, versioned, versioned)), false)
})

test('a file without the controller CRDs is refused with its name', (t) => {
  const file = join(folder(t), 'other.yaml')
  writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n')
  assert.throws(() => metacontrollerSupportsHookV2(file), /has no CustomResourceDefinition compositecontrollers\.metacontroller\.k8s\.io/)
})

test('E2E_METACONTROLLER picks a binary; its CRDs come from E2E_METACONTROLLER_CRDS or the source tree around it', (t) => {
  const tree = folder(t)
  const binary = join(tree, 'metacontroller')
  writeFileSync(binary, '')
  assert.throws(() => metacontrollerBuild('/bin-dir', { E2E_METACONTROLLER: binary }), /E2E_METACONTROLLER_CRDS/)
  mkdirSync(join(tree, 'manifests', 'production'), { recursive: true })
  const crds = crdsFile(join(tree, 'manifests', 'production'), versioned, versioned)
  assert.deepEqual(metacontrollerBuild('/bin-dir', { E2E_METACONTROLLER: binary }), { binary, crds, version: undefined })
  const other = crdsFile(folder(t), webhook, webhook)
  assert.deepEqual(metacontrollerBuild('/bin-dir', { E2E_METACONTROLLER: binary, E2E_METACONTROLLER_CRDS: other }), { binary, crds: other, version: undefined })
  assert.throws(() => metacontrollerBuild('/bin-dir', { E2E_METACONTROLLER: join(tree, 'missing') }), /no such file/)
  assert.deepEqual(metacontrollerBuild('/bin-dir', {}), { binary: '/bin-dir/metacontroller', crds: '/bin-dir/metacontroller-crds-v1.yaml', version: undefined })
})
