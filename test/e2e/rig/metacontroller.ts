/**
 * Which Metacontroller build the rig runs, and what it supports.
 *
 * By default: the one scripts/build-e2e-binaries.sh puts in the bin dir, with its metacontroller-crds-v1.yaml
 * (v1.5.20 today, the only version the Go module proxy serves). E2E_METACONTROLLER names another build's binary
 * instead, for example a v4 built from its source. Its CRDs are E2E_METACONTROLLER_CRDS, or else the first that
 * exists of metacontroller-crds-v1.yaml next to the binary (a bin dir) and
 * manifests/production/metacontroller-crds-v1.yaml beside it (the binary built at the root of a source tree).
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseAllDocuments } from 'yaml'

export interface MetacontrollerBuild {
  binary: string
  /** Metacontroller's own CRDs, applied before it starts. */
  crds: string
  /** The version the build script stamped, or undefined for a build given by E2E_METACONTROLLER. */
  version: string | undefined
}

const CRDS_FILE = 'metacontroller-crds-v1.yaml'

export function metacontrollerBuild (binDir: string, env: NodeJS.ProcessEnv = process.env): MetacontrollerBuild {
  const given = env.E2E_METACONTROLLER ?? ''
  if (given === '') return { binary: join(binDir, 'metacontroller'), crds: join(binDir, CRDS_FILE), version: stampedVersion(binDir) }
  const binary = resolve(given)
  if (!existsSync(binary)) throw new Error(`E2E_METACONTROLLER=${given}: no such file; point it at a Metacontroller binary`)
  const crdsGiven = env.E2E_METACONTROLLER_CRDS ?? ''
  if (crdsGiven !== '') {
    if (!existsSync(crdsGiven)) throw new Error(`E2E_METACONTROLLER_CRDS=${crdsGiven}: no such file; point it at that build's ${CRDS_FILE}`)
    return { binary, crds: resolve(crdsGiven), version: undefined }
  }
  const candidates = [join(dirname(binary), CRDS_FILE), join(dirname(binary), 'manifests', 'production', CRDS_FILE)]
  const crds = candidates.find((file) => existsSync(file))
  if (crds === undefined) {
    throw new Error(`E2E_METACONTROLLER=${given}: none of ${candidates.join(', ')} exists; set E2E_METACONTROLLER_CRDS to that build's ${CRDS_FILE}`)
  }
  return { binary, crds, version: undefined }
}

/**
 * Whether a Metacontroller speaks hook version v2 (v4.15 and later), read from its CRDs: the hooks of both
 * controller kinds then have a `version` field. Without it, the API server refuses `version: v2`.
 */
export function metacontrollerSupportsHookV2 (crdsPath: string): boolean {
  return controllersHaveField(crdsPath, ['spec', 'hooks', 'sync', 'version'])
}

/** Whether a Metacontroller authenticates to hooks (v4.16 and later): both controller kinds have `spec.endpointConfigs`. */
export function metacontrollerSupportsEndpointConfigs (crdsPath: string): boolean {
  return controllersHaveField(crdsPath, ['spec', 'endpointConfigs'])
}

/** Whether every version of both controller CRDs has the field at `path` in its schema. */
function controllersHaveField (crdsPath: string, path: string[]): boolean {
  const documents = parseAllDocuments(readFileSync(crdsPath, 'utf8')).map((document) => document.toJS() as CustomResourceDefinition | null)
  return ['compositecontrollers', 'decoratorcontrollers'].every((plural) => {
    const name = `${plural}.metacontroller.k8s.io`
    const crd = documents.find((document) => document?.kind === 'CustomResourceDefinition' && document.metadata?.name === name)
    if (crd === undefined || crd === null) throw new Error(`${crdsPath} has no CustomResourceDefinition ${name}: is it Metacontroller's ${CRDS_FILE}?`)
    const versions = crd.spec?.versions ?? []
    return versions.length > 0 && versions.every((version) =>
      path.reduce<Schema | undefined>((schema, field) => schema?.properties?.[field], version.schema?.openAPIV3Schema) !== undefined)
  })
}

interface Schema { properties?: Record<string, Schema> }

interface CustomResourceDefinition {
  kind?: string
  metadata?: { name?: string }
  spec?: { versions?: Array<{ schema?: { openAPIV3Schema?: Schema } }> }
}

function stampedVersion (binDir: string): string | undefined {
  try {
    // First line of the stamp: "metacontroller v1.5.20 (v1.5.20)".
    const first = readFileSync(join(binDir, 'metacontroller.stamp'), 'utf8').split('\n')[0] ?? ''
    return /^metacontroller (v\S+)/.exec(first)?.[1]
  } catch {
    return undefined
  }
}
