import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { createGunzip } from 'node:zlib'
import { text } from 'node:stream/consumers'
import type { ApiServer } from './kubeconfig.js'

/**
 * The API server as the plan reads it: GET only, so that the plan can get and list and nothing else, whatever calls
 * it. Lists are read a page at a time; a list's items get the apiVersion and kind that the API server leaves out of
 * them, as Metacontroller's informers have them.
 */

export type Json = Record<string, any>

/** An answer of the API server other than 200, or no answer at all, with what to do about it. */
export class KubeApiError extends Error {
  constructor (readonly statusCode: number | undefined, readonly path: string, message: string) {
    super(message)
    this.name = 'KubeApiError'
  }
}

/** What discovery says of a resource: the kind of its objects, and whether they live in namespaces. */
export interface ResourceInfo {
  kind: string
  namespaced: boolean
}

const PAGE_SIZE = 500
const TIMEOUT_MS = 60_000

export interface ListOptions {
  namespace?: string | undefined
  labelSelector?: string | undefined
}

export class KubeApi {
  private readonly agent: HttpAgent
  private readonly discovered = new Map<string, Promise<Map<string, ResourceInfo>>>()

  constructor (readonly server: ApiServer) {
    const tls = { ca: server.ca, cert: server.cert, key: server.key, rejectUnauthorized: !server.insecure, servername: server.serverName }
    this.agent = server.server.startsWith('https:') ? new HttpsAgent({ keepAlive: true, maxSockets: 8, ...tls }) : new HttpAgent({ keepAlive: true, maxSockets: 8 })
  }

  /** GET `path` (with `query`), parsed; throws KubeApiError for any answer but 200. */
  async get<T = Json> (path: string, query: Record<string, string | undefined> = {}): Promise<T> {
    const search = new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''))
    const url = new URL(`${this.server.server}${path}${search.size === 0 ? '' : `?${search.toString()}`}`)
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method: 'GET',
        agent: this.agent,
        timeout: TIMEOUT_MS,
        headers: {
          accept: 'application/json',
          'accept-encoding': 'gzip',
          'user-agent': 'metacontroller-hooks-plan',
          ...(this.server.authorization === undefined ? {} : { authorization: this.server.authorization })
        }
      }, resolve)
      request.on('timeout', () => { request.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)) })
      request.on('error', reject)
      request.end()
    }).catch((error: NodeJS.ErrnoException) => {
      throw new KubeApiError(undefined, path, `cannot reach the API server at ${this.server.server}: ${error.code ?? error.message}${error.code === undefined ? '' : ` (${error.message})`}; check the kubeconfig's server and certificate authority`)
    })
    const body = await text(response.headers['content-encoding'] === 'gzip' ? response.pipe(createGunzip()) : response)
    const status = response.statusCode ?? 0
    if (status !== 200) throw new KubeApiError(status, path, refusal(status, path, body))
    return JSON.parse(body) as T
  }

  /** Every object of a resource (`/api/v1/pods`, `/apis/<group>/<version>/<plural>`), in a namespace if given. */
  async list (apiVersion: string, plural: string, options: ListOptions = {}): Promise<Json[]> {
    const path = resourcePath(apiVersion, plural, options.namespace)
    const items: Json[] = []
    let next: string | undefined
    do {
      const page = await this.get<{ kind: string, apiVersion: string, items: Json[] | null, metadata?: { continue?: string } }>(path, { limit: String(PAGE_SIZE), continue: next, labelSelector: options.labelSelector })
      const kind = page.kind.replace(/List$/, '')
      for (const item of page.items ?? []) items.push({ apiVersion: page.apiVersion, kind, ...item })
      next = page.metadata?.continue
    } while (next !== undefined && next !== '')
    return items
  }

  /** The resources of an API version, by plural (discovery). */
  async resources (apiVersion: string): Promise<Map<string, ResourceInfo>> {
    let found = this.discovered.get(apiVersion)
    if (found === undefined) {
      found = this.get<{ resources: Array<{ name: string, kind: string, namespaced: boolean }> }>(apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`)
        .then(({ resources }) => new Map(resources.filter(({ name }) => !name.includes('/')).map(({ name, kind, namespaced }) => [name, { kind, namespaced }])))
      this.discovered.set(apiVersion, found)
    }
    return await found
  }

  /** What discovery says of `plural` in `apiVersion`; throws when the API server does not serve it. */
  async resource (apiVersion: string, plural: string): Promise<ResourceInfo> {
    const resources = await this.resources(apiVersion).catch((error: unknown) => {
      if (error instanceof KubeApiError && error.statusCode === 404) throw new KubeApiError(404, apiVersion, `the API server serves no ${apiVersion}: is its CustomResourceDefinition installed?`)
      throw error
    })
    const info = resources.get(plural)
    if (info === undefined) throw new KubeApiError(404, apiVersion, `the API server serves no ${plural} in ${apiVersion}: is its CustomResourceDefinition installed?`)
    return info
  }

  close (): void {
    this.agent.destroy()
  }
}

function resourcePath (apiVersion: string, plural: string, namespace?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
  return `${base}${namespace === undefined || namespace === '' ? '' : `/namespaces/${encodeURIComponent(namespace)}`}/${plural}`
}

/** The API server's own message (a Status object), and what the plan needs in its place. */
function refusal (status: number, path: string, body: string): string {
  let message = body.trim().slice(0, 300)
  try {
    message = String((JSON.parse(body) as { message?: unknown }).message ?? message)
  } catch { /* not a Status: its text, as it is */ }
  if (status === 401) return `the API server does not know the kubeconfig's user (401 on GET ${path}: ${message}); renew its credentials`
  if (status === 403) return `the API server refused GET ${path} (403: ${message}); the plan needs get and list on it: bind the ClusterRole of manifests/plan to its user`
  return `GET ${path} answered ${status}: ${message}`
}
