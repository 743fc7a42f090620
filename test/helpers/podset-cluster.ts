import { readFileSync } from 'node:fs'
import { createServer, type Server, type ServerResponse } from 'node:http'
import { join } from 'node:path'
import { controllerObject } from '../../dev/api-server/metacontroller.js'
import { controllers } from '../../hooks/controllers.js'

/**
 * An API server of `count` PodSets of 3 pods each, all in namespace default: PodSet's CompositeController as the
 * manifests install it, discovery, and the lists of PodSets and pods, paged by `limit` and `continue` as the API server
 * pages them. Each object is the steady-state fixture's, renamed, and made when its page is asked for, so the server
 * holds no cluster.
 */

const found = controllers.find((controller) => controller.name === 'podset')
if (found === undefined) throw new Error('the registry has no podset')
const podset = found
const fixture = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'podset', 'steady-state.json'), 'utf8')) as { parent: { metadata: { name: string, uid: string } }, children: Record<string, Record<string, unknown>> }
const { name, uid } = fixture.parent.metadata
const parentText = JSON.stringify(fixture.parent)
const podTexts = Object.values(fixture.children).flatMap((group) => Object.values(group)).map((pod) => JSON.stringify(pod))

function renamed (text: string, index: number): Record<string, unknown> {
  const id = `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`
  return JSON.parse(text.replaceAll(uid, id).replaceAll(name, `podset-${index}`)) as Record<string, unknown>
}

function page (response: ServerResponse, kind: string, apiVersion: string, total: number, item: (index: number) => Record<string, unknown>, url: URL): void {
  const from = Number(url.searchParams.get('continue') ?? 0)
  const to = Math.min(total, from + Number(url.searchParams.get('limit') ?? total))
  const items = Array.from({ length: to - from }, (_, offset) => item(from + offset))
  response.writeHead(200, { 'content-type': 'application/json' })
  response.end(JSON.stringify({ kind, apiVersion, metadata: to < total ? { continue: String(to) } : {}, items }))
}

export async function podSetCluster (count: number): Promise<{ url: string, server: Server }> {
  const json = (response: ServerResponse, body: unknown): void => { response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)) }
  const resource = podset.resource
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://api')
    // Every object is in namespace default: its lists are the lists of all namespaces.
    switch (url.pathname.replace('/namespaces/default/', '/')) {
      case '/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/podset': return json(response, controllerObject(podset))
      case `/apis/${resource.apiVersion}`: return json(response, { resources: [{ name: resource.plural, kind: resource.kind, namespaced: true }] })
      case '/api/v1': return json(response, { resources: [{ name: 'pods', kind: 'Pod', namespaced: true }] })
      case `/apis/${resource.apiVersion}/${resource.plural}`:
        return page(response, `${resource.kind}List`, resource.apiVersion, count, (index) => renamed(parentText, index), url)
      case '/api/v1/pods':
        return page(response, 'PodList', 'v1', count * podTexts.length, (index) => renamed(podTexts[index % podTexts.length] ?? '', Math.floor(index / podTexts.length)), url)
      default: response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', message: 'not found' }))
    }
  })
  const port = await new Promise<number>((resolve) => { server.listen(0, '127.0.0.1', () => { resolve((server.address() as { port: number }).port) }) })
  return { url: `http://127.0.0.1:${port}`, server }
}
