import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { parse } from 'yaml'

/**
 * Where the API server is and who the plan is to it, from a kubeconfig as kubectl reads one: `--kubeconfig`, else the
 * files of $KUBECONFIG merged (the first file to name an entry wins), else ~/.kube/config, else the pod's service
 * account. A user is a token, a token file, a client certificate, a username and password, or an exec plugin.
 */

export interface ApiServer {
  server: string
  /** The context's name, for messages; undefined in a pod. */
  context: string | undefined
  ca: Buffer | undefined
  /** insecure-skip-tls-verify. */
  insecure: boolean
  /** tls-server-name: the name the server's certificate is checked against. */
  serverName: string | undefined
  /** The Authorization header, if any. */
  authorization: string | undefined
  cert: Buffer | undefined
  key: Buffer | undefined
}

/** A kubeconfig the plan cannot use, with what to do about it. */
export class KubeconfigError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'KubeconfigError'
  }
}

type Json = Record<string, any>

interface Named { name: string, [entry: string]: unknown }

interface LoadedConfig {
  clusters: Map<string, { value: Json, dir: string }>
  users: Map<string, { value: Json, dir: string }>
  contexts: Map<string, Json>
  currentContext: string | undefined
  files: string[]
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount'

/** The kubeconfig files to read, in kubectl's order of precedence. */
export function kubeconfigFiles (flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string[] {
  if (flag !== undefined && flag !== '') return [resolve(flag)]
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((file) => file !== '')
  if (listed.length > 0) return listed.map((file) => resolve(file))
  return [join(homedir(), '.kube', 'config')]
}

function readConfig (files: string[], required: boolean): LoadedConfig {
  const loaded: LoadedConfig = { clusters: new Map(), users: new Map(), contexts: new Map(), currentContext: undefined, files: [] }
  for (const file of files) {
    if (!existsSync(file)) {
      if (required) throw new KubeconfigError(`kubeconfig ${file} does not exist: give --kubeconfig the file kubectl uses`)
      continue
    }
    let config: Json
    try {
      config = parse(readFileSync(file, 'utf8')) ?? {}
    } catch (error) {
      throw new KubeconfigError(`kubeconfig ${file} is not valid YAML: ${(error as Error).message.split('\n')[0]}`)
    }
    loaded.files.push(file)
    const dir = dirname(file)
    for (const entry of (config.clusters ?? []) as Named[]) if (!loaded.clusters.has(entry.name)) loaded.clusters.set(entry.name, { value: entry.cluster as Json ?? {}, dir })
    for (const entry of (config.users ?? []) as Named[]) if (!loaded.users.has(entry.name)) loaded.users.set(entry.name, { value: entry.user as Json ?? {}, dir })
    for (const entry of (config.contexts ?? []) as Named[]) if (!loaded.contexts.has(entry.name)) loaded.contexts.set(entry.name, entry.context as Json ?? {})
    if (loaded.currentContext === undefined && typeof config['current-context'] === 'string' && config['current-context'] !== '') loaded.currentContext = config['current-context']
  }
  return loaded
}

/** A file named by a kubeconfig entry: relative paths are relative to the file that holds the entry. */
function readNamed (path: string, dir: string, what: string): Buffer {
  const file = isAbsolute(path) ? path : join(dir, path)
  try {
    return readFileSync(file)
  } catch (error) {
    throw new KubeconfigError(`cannot read the ${what} ${file} that the kubeconfig names: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
}

/** `<field>-data` (base64) or `<field>` (a file), whichever the entry has. */
function dataOrFile (entry: Json, field: string, dir: string, what: string): Buffer | undefined {
  const data = entry[`${field}-data`]
  if (typeof data === 'string' && data !== '') return Buffer.from(data, 'base64')
  const file = entry[field]
  return typeof file === 'string' && file !== '' ? readNamed(file, dir, what) : undefined
}

/** The pod's service account, when the plan runs in a pod and no kubeconfig exists. */
function inCluster (env: NodeJS.ProcessEnv): ApiServer | undefined {
  const host = env.KUBERNETES_SERVICE_HOST
  if (host === undefined || host === '' || !existsSync(join(SERVICE_ACCOUNT, 'token'))) return undefined
  const port = env.KUBERNETES_SERVICE_PORT ?? '443'
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    context: undefined,
    ca: readNamed('ca.crt', SERVICE_ACCOUNT, 'service account CA'),
    insecure: false,
    serverName: undefined,
    authorization: `Bearer ${readNamed('token', SERVICE_ACCOUNT, 'service account token').toString('utf8').trim()}`,
    cert: undefined,
    key: undefined
  }
}

const run = promisify(execFile)

/** What an exec credential plugin answers (client.authentication.k8s.io ExecCredential). */
async function execCredential (exec: Json, dir: string, user: string): Promise<Pick<ApiServer, 'authorization' | 'cert' | 'key'>> {
  const command = exec.command as unknown
  if (typeof command !== 'string' || command === '') throw new KubeconfigError(`user ${user}: its exec plugin names no command`)
  const apiVersion = typeof exec.apiVersion === 'string' ? exec.apiVersion : 'client.authentication.k8s.io/v1'
  const env = Object.fromEntries(((exec.env ?? []) as Array<{ name: string, value: string }>).map(({ name, value }) => [name, value]))
  const info = JSON.stringify({ apiVersion, kind: 'ExecCredential', spec: { interactive: false } })
  // A command given as a relative path is relative to the kubeconfig, as kubectl runs it.
  const program = command.includes('/') && !isAbsolute(command) ? join(dir, command) : command
  let stdout: string
  try {
    ({ stdout } = await run(program, (exec.args ?? []) as string[], { env: { ...process.env, ...env, KUBERNETES_EXEC_INFO: info }, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 }))
  } catch (error) {
    const failure = error as Error & { stderr?: string }
    throw new KubeconfigError(`user ${user}: its exec plugin ${command} failed: ${(failure.stderr ?? '').trim().split('\n').at(-1) || failure.message}`)
  }
  let status: Json | undefined
  try {
    status = (JSON.parse(stdout) as Json).status
  } catch {
    throw new KubeconfigError(`user ${user}: its exec plugin ${command} printed no ExecCredential JSON`)
  }
  if (typeof status?.token === 'string') return { authorization: `Bearer ${status.token}`, cert: undefined, key: undefined }
  if (typeof status?.clientCertificateData === 'string' && typeof status.clientKeyData === 'string') {
    return { authorization: undefined, cert: Buffer.from(status.clientCertificateData), key: Buffer.from(status.clientKeyData) }
  }
  throw new KubeconfigError(`user ${user}: its exec plugin ${command} gave neither a token nor a client certificate`)
}

async function credentials (user: Json, dir: string, name: string): Promise<Pick<ApiServer, 'authorization' | 'cert' | 'key'>> {
  if (user['auth-provider'] !== undefined) {
    throw new KubeconfigError(`user ${name} uses an auth-provider (${String(user['auth-provider']?.name)}), which kubectl itself no longer supports: use its exec plugin instead`)
  }
  if (user.exec !== undefined && user.exec !== null) return await execCredential(user.exec, dir, name)
  const cert = dataOrFile(user, 'client-certificate', dir, 'client certificate')
  const key = dataOrFile(user, 'client-key', dir, 'client key')
  let authorization: string | undefined
  if (typeof user.token === 'string' && user.token !== '') authorization = `Bearer ${user.token}`
  else if (typeof user.tokenFile === 'string' && user.tokenFile !== '') authorization = `Bearer ${readNamed(user.tokenFile, dir, 'token file').toString('utf8').trim()}`
  else if (typeof user.username === 'string' && user.username !== '') authorization = `Basic ${Buffer.from(`${user.username}:${String(user.password ?? '')}`).toString('base64')}`
  return { authorization, cert, key }
}

/**
 * The API server and credentials of `context` (default: the current context) in the kubeconfig files, or of the
 * pod's service account when none of the default files exists. Throws a KubeconfigError that says what to fix.
 */
export async function apiServer (options: { kubeconfig?: string | undefined, context?: string | undefined }, env: NodeJS.ProcessEnv = process.env): Promise<ApiServer> {
  const explicit = options.kubeconfig !== undefined && options.kubeconfig !== ''
  const files = kubeconfigFiles(options.kubeconfig, env)
  const config = readConfig(files, explicit)
  if (config.files.length === 0) {
    const pod = options.context === undefined ? inCluster(env) : undefined
    if (pod !== undefined) return pod
    throw new KubeconfigError(`no kubeconfig: none of ${files.join(', ')} exists; give --kubeconfig, or set KUBECONFIG`)
  }
  const contextName = options.context ?? config.currentContext
  if (contextName === undefined) throw new KubeconfigError(`${config.files.join(', ')} sets no current-context: give --context (one of ${[...config.contexts.keys()].join(', ') || 'none'})`)
  const context = config.contexts.get(contextName)
  if (context === undefined) throw new KubeconfigError(`no context ${contextName} in ${config.files.join(', ')}; its contexts: ${[...config.contexts.keys()].join(', ') || 'none'}`)
  const cluster = config.clusters.get(String(context.cluster))
  if (cluster === undefined) throw new KubeconfigError(`context ${contextName} names cluster ${String(context.cluster)}, which ${config.files.join(', ')} does not define`)
  const server = cluster.value.server
  if (typeof server !== 'string' || !/^https?:\/\//.test(server)) throw new KubeconfigError(`cluster ${String(context.cluster)} has no server URL (https://host:port)`)
  if (cluster.value['proxy-url'] !== undefined) throw new KubeconfigError(`cluster ${String(context.cluster)} goes through proxy-url ${String(cluster.value['proxy-url'])}, which the plan does not support: run it where the API server is reachable directly`)
  const userName = context.user === undefined ? undefined : String(context.user)
  const user = userName === undefined ? undefined : config.users.get(userName)
  if (userName !== undefined && user === undefined) throw new KubeconfigError(`context ${contextName} names user ${userName}, which ${config.files.join(', ')} does not define`)
  return {
    server: server.replace(/\/+$/, ''),
    context: contextName,
    ca: dataOrFile(cluster.value, 'certificate-authority', cluster.dir, 'certificate authority'),
    insecure: cluster.value['insecure-skip-tls-verify'] === true,
    serverName: typeof cluster.value['tls-server-name'] === 'string' ? cluster.value['tls-server-name'] : undefined,
    ...(user === undefined || userName === undefined ? { authorization: undefined, cert: undefined, key: undefined } : await credentials(user.value, user.dir, userName))
  }
}
