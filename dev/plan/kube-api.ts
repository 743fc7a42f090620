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
// A list this long is not planned: an API server whose continue token never ends is stopped here, not followed forever.
const MAX_PAGES = 2000
const TIMEOUT_MS = 60_000

export interface ListOptions {
  namespace?: string | undefined
  labelSelector?: string | undefined
  /** Called after each page: how many objects are read so far. */
  progress?: (read: number) => void
}

/** The start of what the API server sent, in one line. */
function excerpt (body: string): string {
  const start = JSON.stringify(body.slice(0, 80))
  return body.length > 80 ? `${start}...` : start
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

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
    try {
      return JSON.parse(body) as T
    } catch {
      throw new KubeApiError(status, path, `GET ${path} answered 200 with a body that is not JSON: ${excerpt(body)}; is the kubeconfig's server an API server?`)
    }
  }

  /** Every object of a resource (`/api/v1/pods`, `/apis/<group>/<version>/<plural>`), in a namespace if given. */
  async list (apiVersion: string, plural: string, options: ListOptions = {}): Promise<Json[]> {
    const items: Json[] = []
    for await (const page of this.pages(apiVersion, plural, options)) {
      for (const item of page) items.push(item)
      options.progress?.(items.length)
    }
    return items
  }

  /**
   * The objects of a resource as `list` reads them, a page at a time, so that a caller may let each go before the next;
   * a page that is not a list, or a continue token still given after MAX_PAGES pages, throws.
   */
  async * pages (apiVersion: string, plural: string, options: ListOptions = {}): AsyncGenerator<Json[]> {
    const path = resourcePath(apiVersion, plural, options.namespace)
    let next: string | undefined
    for (let pages = 0; pages === 0 || (next !== undefined && next !== ''); pages++) {
      if (pages === MAX_PAGES) {
        throw new KubeApiError(200, path, `GET ${path} still gave a continue token after ${MAX_PAGES.toLocaleString('en-US')} pages of ${PAGE_SIZE}: stopped; a list of more than ${(MAX_PAGES * PAGE_SIZE).toLocaleString('en-US')} objects is not planned (narrow it with -n or -l)`)
      }
      const page = await this.get<unknown>(path, { limit: String(PAGE_SIZE), continue: next, labelSelector: options.labelSelector })
      const items = isObject(page) ? page.items ?? [] : undefined
      const token = isObject(page) && isObject(page.metadata) ? page.metadata.continue : undefined
      if (!isObject(page) || typeof page.kind !== 'string' || typeof page.apiVersion !== 'string' || !Array.isArray(items) || !items.every(isObject) || (token !== undefined && typeof token !== 'string')) {
        throw new KubeApiError(200, path, `GET ${path} answered 200 with something other than a list: ${excerpt(JSON.stringify(page))}; is the kubeconfig's server an API server?`)
      }
      const kind = page.kind.replace(/List$/, '')
      yield items.map((item) => ({ apiVersion: page.apiVersion, kind, ...item }))
      next = token
    }
  }

  /** The resources of an API version, by plural (discovery). */
  async resources (apiVersion: string): Promise<Map<string, ResourceInfo>> {
    let found = this.discovered.get(apiVersion)
    if (found === undefined) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
      found = this.get(path).then((list) => {
        const resources: unknown = list.resources
        if (!Array.isArray(resources) || !resources.every((resource) => isObject(resource) && typeof resource.name === 'string' && typeof resource.kind === 'string')) {
          throw new KubeApiError(200, path, `GET ${path} answered 200 with something other than an API resource list: ${excerpt(JSON.stringify(list))}`)
        }
        return new Map((resources as Json[]).filter(({ name }) => !String(name).includes('/')).map(({ name, kind, namespaced }) => [String(name), { kind: String(kind), namespaced: namespaced === true }]))
      })
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
