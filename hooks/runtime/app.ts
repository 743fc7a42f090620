import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createSecureServer, type ServerOptions as SecureServerOptions } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { ValidatorFactory } from '@fastify/ajv-compiler'
import { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifySchemaCompiler, type FastifyServerOptions } from 'fastify'
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { Config } from './config.js'
import { hookNames, type Controller } from '../framework/controller.js'
import type { PostgresNeed } from '../database/pool.js'
import { HookError, WrongKindError } from '../framework/errors.js'
import type { AdmissionClock } from '../http/hook-call.js'
import { inTurn } from '../http/connection-turns.js'
import { hookRoutes } from '../http/hook-routes.js'
import { LogLines } from './log-lines.js'
import { createProbes, probeRoutes, type Probes } from './probes.js'
import { problems } from '../framework/spec.js'
import type { ErrorResponse } from '../framework/wire/schemas.js'

export interface AppOptions {
  config: Config
  controllers: readonly Controller[]
  /** The I/O the controllers declared (see `needed`); starting fails when one is missing. */
  io: Partial<PostgresNeed>
  /** Set by the server on SIGTERM: readiness turns 503 while in-flight hooks finish. */
  lifecycle: { draining: boolean }
  /** What health, readiness and metrics report, when the probe port shares it; else the app makes its own. */
  probes?: Probes
  clock?: () => Date
  /** The clock and ticker of the admission of bodies; the process's by default. */
  admissionClock?: AdmissionClock
}

let stdout: LogLines | undefined

/** Metacontroller's Go client keeps idle connections for 90 s: close ours later, never under it. */
const KEEP_ALIVE_TIMEOUT_MS = 95_000

/** Instance-level options: body limit, timeouts, strict validation, TLS, logging. */
export function serverOptions (config: Config): FastifyServerOptions & { https?: object } {
  stdout ??= new LogLines(1)
  const https: SecureServerOptions | undefined = config.tls === undefined
    ? undefined
    : {
        cert: readFileSync(config.tls.certFile),
        key: readFileSync(config.tls.keyFile),
        minVersion: 'TLSv1.2',
        ...(config.tls.clientCaFile === undefined
          ? {}
          : { ca: readFileSync(config.tls.clientCaFile), requestCert: true, rejectUnauthorized: true })
      }
  return {
    bodyLimit: config.bodyLimit,
    // One line per hook call comes from http/hook-telemetry.ts instead of fastify's two per request.
    logController: new LogController({ disableRequestLogging: true }),
    logger: {
      level: config.logLevel,
      stream: stdout
    },
    // Requests log through the server's logger itself: the one line of a hook call names its controller, hook and
    // parent, and a child logger per request, to bind a request id that no line needs, took 0.7 % of the CPU.
    childLoggerFactory: (logger) => logger,
    // Request bodies are checked with TypeBox's compiler, as specs are (spec.ts): one validator. Fastify still loads
    // ajv, but compiles no ajv validator, which held 6 MiB more of resident memory.
    // (Fastify types this factory as ajv's, whose compilers take more than a route's schema.)
    schemaController: { compilersFactory: { buildValidator: (() => bodyValidator) as unknown as ValidatorFactory } },
    schemaErrorFormatter: (errors) => new Error(errors.map((error) => error.message).join('; ')),
    serverFactory: (handler) => nodeServer(handler, { https, requestTimeoutMs: 60_000 }),
    ...(https === undefined ? {} : { https })
  }
}

/**
 * The Node.js server under an app: HTTPS when `https` is given, its requests handed to the app one per connection at
 * a time (connection-turns.ts), with explicit timeouts: none for an idle socket, `requestTimeoutMs` for a request's
 * headers and body to arrive.
 */
function nodeServer (handler: (request: IncomingMessage, response: ServerResponse) => void, options: { https?: SecureServerOptions, requestTimeoutMs: number }): Server {
  const server = options.https === undefined ? createServer(inTurn(handler)) : createSecureServer(options.https, inTurn(handler))
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
  server.requestTimeout = options.requestTimeoutMs
  server.setTimeout(0)
  return server
}

/** A validator of a request body against its TypeBox schema; fastify answers what it finds with 400. */
const bodyValidator: FastifySchemaCompiler<TSchema> = ({ schema }) => {
  const check = TypeCompiler.Compile(schema)
  return (value: unknown) => check.Check(value)
    ? { value }
    : { error: problems(check, value, 'body').map((message) => ({ message, keyword: 'type', instancePath: '', schemaPath: '', params: {} })) }
}

/** The probe port's server: plain HTTP whatever the hook port asks, GET requests only, the hook server's logger. */
export function probeServerOptions (log: FastifyBaseLogger): FastifyServerOptions {
  return {
    loggerInstance: log,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024,
    serverFactory: (handler) => nodeServer(handler, { requestTimeoutMs: 10_000 })
  }
}

const PROBE_PATHS = ['/healthz', '/readyz', '/metrics']

/**
 * The probe port's application: health, readiness and metrics, and for anything else a 404 or 405 that says where
 * the hooks are, answered before a body is read (a hook request sent here is larger than the port's body limit).
 */
export async function probeApp (fastify: FastifyInstance, options: { config: Config, probes: Probes, hookPort?: () => number }): Promise<void> {
  const { config } = options
  // The ports listened on, which PORT=0 and HOOKS_PROBE_PORT=0 leave to the system.
  const probePort = (): number => (fastify.server.address() as AddressInfo | null)?.port ?? config.probePort
  const hookPort = options.hookPort ?? (() => config.port)
  fastify.setErrorHandler(errorHandler(config, []))
  answerMisdirected(fastify, new Map(PROBE_PATHS.map((path) => [path, 'GET, HEAD'])), (method, path) =>
    `no ${method} ${path} on the probe port (HOOKS_PROBE_PORT, ${probePort()}), which serves GET /healthz, /readyz and /metrics only: the hooks are served on PORT (${hookPort()})`)
  await fastify.register(probeRoutes, { probes: options.probes })
}

/** The whole application as one plugin: health, metrics, the hooks of every controller, one error handler. */
export async function app (fastify: FastifyInstance, options: AppOptions): Promise<void> {
  const { config, lifecycle } = options
  const probes = options.probes ?? createProbes({ config, io: options.io, lifecycle, log: fastify.log })

  fastify.setErrorHandler(errorHandler(config, options.controllers))

  const hookPaths = options.controllers.flatMap((controller) => hookNames(controller).map((hook) => `/${controller.name}/${hook}`))
  const methods = new Map([...hookPaths.map((path) => [path, 'POST'] as const), ...PROBE_PATHS.map((path) => [path, 'GET, HEAD'] as const)])
  answerMisdirected(fastify, methods, (method, path) =>
    `no ${method} ${path} here: the hooks are POST ${hookPaths.join(', ')}, with Content-Type: application/json; also GET /healthz, /readyz and /metrics`)

  // Hook requests are JSON: without this parser, a text/plain body would reach validation and get "body must be object".
  fastify.removeContentTypeParser('text/plain')

  // While draining, answers close their connection, so that keep-alive clients do not hold the shutdown open.
  fastify.addHook('onSend', (_request, reply, _payload, done) => {
    if (lifecycle.draining) reply.header('connection', 'close')
    done()
  })

  await fastify.register(probeRoutes, { probes })
  await fastify.register(hookRoutes, {
    controllers: options.controllers,
    io: options.io,
    metrics: probes.metrics,
    clock: options.clock ?? (() => new Date()),
    bearerTokens: config.bearerTokens,
    bodyLimit: config.bodyLimit,
    bodyTimeoutMs: config.bodyTimeoutMs,
    admissionTimeoutMs: config.admissionTimeoutMs,
    admissionClock: options.admissionClock
  })
}

/** Every error, as one line that says what to do: 413 names HOOKS_BODY_LIMIT, 500 hides the details and logs them. */
function errorHandler (config: Config, controllers: readonly Controller[]) {
  return async (error: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return await refuse(request, reply, 413, `request body is larger than HOOKS_BODY_LIMIT (${config.bodyLimit} bytes); raise HOOKS_BODY_LIMIT on the hook server`)
    }
    const statusCode = error instanceof HookError ? error.statusCode : error.statusCode ?? 500
    if (statusCode >= 500 && !(error instanceof HookError)) {
      request.log.error({ err: error, url: request.url }, 'unexpected error in hook')
      return await reply.code(500).send({ error: 'Internal Server Error', message: `unexpected error; the hook server's log has the details (request ${request.id})` })
    }
    const message = error instanceof WrongKindError
      ? `${error.message}: ${hookServing(controllers, error.sent, request.routeOptions.config.hook === 'finalize')}`
      : error.validation !== undefined
        ? otherControllerType(controllers, request) ?? `${error.message} (the body must be a Metacontroller v2 hook request)`
        : error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? `the body must be a Metacontroller hook request sent as JSON, with the header Content-Type: application/json (this one had ${request.headers['content-type'] === undefined ? 'no Content-Type' : `Content-Type: ${request.headers['content-type'].slice(0, 100)}`})`
          : error.message
    return await refuse(request, reply, statusCode, message)
  }
}

/** What a request of each controller type carries: Metacontroller sends a composite `parent`, a decorator `object`. */
const REQUEST_SHAPES = {
  composite: { type: 'CompositeController', parent: 'parent', fields: '(parent, children)' },
  decorator: { type: 'DecoratorController', parent: 'object', fields: '(object, attachments)' }
} as const

/**
 * For a body that fails validation because it is a request of the other controller type (a composite's request sent
 * to a decorator's hook, or the reverse): what it is, and the hook that serves its kind.
 */
function otherControllerType (controllers: readonly Controller[], request: FastifyRequest): string | undefined {
  const route = controllers.find((controller) => controller.name === request.routeOptions.config.controller)
  const body = request.body as Record<string, unknown> | null
  if (route === undefined || typeof body !== 'object' || body === null || REQUEST_SHAPES[route.type].parent in body) return undefined
  const sent = route.type === 'composite' ? 'decorator' : 'composite'
  const parent = body[REQUEST_SHAPES[sent].parent] as { apiVersion?: unknown, kind?: unknown } | null | undefined
  if (typeof parent !== 'object' || parent === null) return undefined
  return `this is a ${REQUEST_SHAPES[sent].type} request ${REQUEST_SHAPES[sent].fields} of ${kindOf(parent)}, ` +
    `but ${pathOf(request)} is a ${REQUEST_SHAPES[route.type].type} hook ${REQUEST_SHAPES[route.type].fields}: ` +
    hookServing(controllers.filter((controller) => controller.type === sent), parent, body.finalizing === true)
}

const kindOf = (object: { apiVersion?: unknown, kind?: unknown }): string => `${String(object.apiVersion).slice(0, 100)} ${String(object.kind).slice(0, 100)}`

/**
 * Where a parent of `object`'s kind goes, among `controllers`: the finalize hook of the controller that serves the
 * kind when `finalizing` and it has one, else its sync hook; or that no hook here serves it.
 */
function hookServing (controllers: readonly Controller[], object: { apiVersion?: unknown, kind?: unknown }, finalizing: boolean): string {
  const serving = controllers.find((controller) => controller.resource.apiVersion === object.apiVersion && controller.resource.kind === object.kind)
  if (serving === undefined) return `no hook here serves ${kindOf(object)}`
  return `send it to /${serving.name}/${finalizing && serving.hooks.finalize !== undefined ? 'finalize' : 'sync'}`
}

const pathOf = (request: FastifyRequest): string => request.url.split('?')[0]?.slice(0, 200) ?? ''

/**
 * Answers a request that no route takes: 405 with `Allow` on a path that other methods serve (`methods`), else 404
 * with `notHere`'s message. It answers in onRequest, before fastify reads the body: a hook request sent to the probe
 * port is larger than that port's limit, and would get 413. The not-found handler set in this plugin is what makes
 * fastify run this plugin's onRequest hooks on such requests.
 */
function answerMisdirected (fastify: FastifyInstance, methods: ReadonlyMap<string, string>, notHere: (method: string, path: string) => string): void {
  const answer = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const path = pathOf(request)
    const allow = methods.get(path)
    if (allow === undefined) return await refuse(request, reply, 404, notHere(request.method, path))
    reply.header('allow', allow)
    return await refuse(request, reply, 405, allow === 'POST'
      ? `${path} is a hook: send the Metacontroller hook request with POST and Content-Type: application/json, not ${request.method}`
      : `${path} answers GET (and HEAD) only, not ${request.method}`)
  }
  // In the callback style: an async hook would cost every request a promise.
  fastify.addHook('onRequest', (request, reply, done) => {
    if (request.is404) answer(request, reply).catch(done)
    else done()
  })
  fastify.setNotFoundHandler(answer)
}

/**
 * Every error answer: the status's name and a message that says what to do, logged at info in one line: a hook
 * call's own line (http/hook-call.ts), which takes the answer's message as its reason, or for any other request this one.
 */
async function refuse (request: FastifyRequest, reply: FastifyReply, statusCode: number, message: string): Promise<FastifyReply> {
  if (reply.routeOptions.config.controller === undefined) request.log.info({ statusCode, url: request.url, reason: message }, 'request refused')
  return await reply.code(statusCode).send({ error: errorName(statusCode), message } satisfies ErrorResponse)
}

function errorName (statusCode: number): string {
  switch (statusCode) {
    case 400: return 'Bad Request'
    case 401: return 'Unauthorized'
    case 404: return 'Not Found'
    case 405: return 'Method Not Allowed'
    case 408: return 'Request Timeout'
    case 413: return 'Payload Too Large'
    case 415: return 'Unsupported Media Type'
    case 422: return 'Unprocessable Entity'
    case 503: return 'Service Unavailable'
    default: return 'Error'
  }
}
