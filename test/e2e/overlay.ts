import { writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { stringify } from 'yaml'
import { hookNames, type Controller } from '../../hooks/framework/controller.js'
import { webhookEtag } from '../../dev/manifests.js'

/**
 * The end-to-end suite's install, generated from the controller registry: the product's CRDs and controllers as a
 * user applies them (manifests/crds and manifests/controllers), through a kustomization whose patches only
 *   - point every hook at the hook server the suite runs as a local process (a webhook's `url` overrides its
 *     `service`; manifests/server is left out);
 *   - resync every few seconds instead of the product's 300 s (postgres-writer) or never (the composites), so
 *     that the stability check's three resync periods fit in a test;
 *   - optionally remove the hooks' `version` and `etag`, for a Metacontroller older than v4.15 (see `stripHookVersion`).
 */

type JsonPatch = Array<{ op: 'add' | 'remove', path: string, value?: unknown }>

export interface OverlayOptions {
  /** Where the hook server listens, e.g. `http://127.0.0.1:40123`. */
  hookServerUrl: string
  resyncPeriodSeconds: number
  /**
   * Remove each hook's `version: v2` and its webhook's `etag`. Metacontroller v1.5.20's CRDs have neither field (v2
   * hooks came with v4.15), so its API server would refuse them; without `version`, v1.5.20 speaks hook v1, which
   * differs from v2 in the child-map keys (`name` instead of `namespace/name`), keys the hooks never read; without
   * `etag`, every resync is answered in full. Keep both for a v4 Metacontroller.
   */
  stripHookVersion: boolean
}

function webhookUrls (controller: Controller, hookServerUrl: string): JsonPatch {
  return hookNames(controller).map((hook) => ({ op: 'add', path: `/spec/hooks/${hook}/webhook/url`, value: `${hookServerUrl}/${controller.name}/${hook}` }))
}

function hookVersionsRemoved (controller: Controller): JsonPatch {
  return hookNames(controller).flatMap((hook) => [
    { op: 'remove' as const, path: `/spec/hooks/${hook}/version` },
    ...(webhookEtag(controller) === undefined ? [] : [{ op: 'remove' as const, path: `/spec/hooks/${hook}/webhook/etag` }])
  ])
}

function resyncPeriod (seconds: number): JsonPatch {
  return [{ op: 'add', path: '/spec/resyncPeriodSeconds', value: seconds }]
}

/** The kustomization of the install, for a folder `overlayDir`, over the manifests in `manifestsDir`. */
export function overlayKustomization (controllers: readonly Controller[], manifestsDir: string, overlayDir: string, options: OverlayOptions): Record<string, unknown> {
  return {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: ['crds', 'controllers'].map((folder) => relative(overlayDir, join(manifestsDir, folder))),
    patches: controllers.map((controller) => ({
      target: {
        group: 'metacontroller.k8s.io',
        kind: controller.type === 'composite' ? 'CompositeController' : 'DecoratorController',
        name: controller.name
      },
      patch: JSON.stringify([
        ...webhookUrls(controller, options.hookServerUrl),
        ...(options.stripHookVersion ? hookVersionsRemoved(controller) : []),
        ...resyncPeriod(options.resyncPeriodSeconds)
      ])
    }))
  }
}

/** Writes the install's kustomization.yaml into `overlayDir`, ready for `kubectl apply -k`. */
export async function writeOverlay (controllers: readonly Controller[], manifestsDir: string, overlayDir: string, options: OverlayOptions): Promise<void> {
  await writeFile(join(overlayDir, 'kustomization.yaml'), stringify(overlayKustomization(controllers, manifestsDir, overlayDir, options)))
}
