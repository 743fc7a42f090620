import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { parseAllDocuments } from 'yaml'
import { hookNames } from '../../hooks/framework/controller.js'
import { controllers } from '../../hooks/controllers.js'
import { webhookEtag } from '../../dev/manifests.js'
import { kustomize } from './environment.js'
import { writeOverlay } from './overlay.js'

const manifests = join(import.meta.dirname, '..', '..', 'manifests')

async function render (stripHookVersion: boolean): Promise<any[]> {
  const dir = await mkdtemp(join(tmpdir(), 'e2e-overlay-test-'))
  try {
    await writeOverlay(controllers, manifests, dir, { hookServerUrl: 'http://127.0.0.1:40999', resyncPeriodSeconds: 5, stripHookVersion })
    return parseAllDocuments(await kustomize(dir)).map((document) => document.toJS())
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

test('the generated install points every hook of every registered controller at the hook server, and keeps the CRDs as they are', async () => {
  for (const stripHookVersion of [true, false]) {
    const objects = await render(stripHookVersion)
    for (const controller of controllers) {
      const installed = objects.find((o) => o.apiVersion === 'metacontroller.k8s.io/v1alpha1' && o.metadata.name === controller.name)
      assert.ok(installed !== undefined, controller.name)
      assert.deepEqual(Object.keys(installed.spec.hooks).sort(), [...hookNames(controller)].sort())
      for (const hook of hookNames(controller)) {
        const { webhook, version } = installed.spec.hooks[hook]
        assert.equal(webhook.url, `http://127.0.0.1:40999/${controller.name}/${hook}`)
        assert.equal(version, stripHookVersion ? undefined : 'v2', `${controller.name} ${hook} with stripHookVersion ${stripHookVersion}`)
        assert.deepEqual(webhook.etag, stripHookVersion ? undefined : webhookEtag(controller), `${controller.name} ${hook} with stripHookVersion ${stripHookVersion}`)
      }
      assert.equal(installed.spec.resyncPeriodSeconds, 5)
    }
    const crds = parseAllDocuments(await kustomize(join(manifests, 'crds'))).map((document) => document.toJS())
    assert.deepEqual(objects.filter((o) => o.kind === 'CustomResourceDefinition'), crds)
  }
})
