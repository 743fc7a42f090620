import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { controllers } from '../../hooks/controllers.js'
import { UnboundedSpecError, worstResource } from '../../dev/worst-spec.js'
import type { Controller } from '../../hooks/framework/controller.js'

/**
 * Custom resources that the hooks cannot act on, each as a person would apply it: the API server must refuse every
 * one at `kubectl apply` (the generated CRDs' OpenAPI and CEL rules; test/e2e), and the hook refuses each as well
 * (its second line of defence; test/framework/parent.test.ts). Each starts from the controller's original sample.
 */

type Json = Record<string, any>

export interface RefusedResource {
  controller: string
  /** What is wrong, in words. */
  what: string
  resource: Json
  /** JSON text that replaces the string "<literal>" in the resource: a number JavaScript cannot hold exactly. */
  literal?: string
  /** What kubectl apply's error says. */
  apiServer: RegExp
  /** How the hook refuses it: a 200 with Ready=False and this reason, or a 422 (a name it cannot use); and what it says. */
  hook: { refusal: 422 | 'InvalidSpec' | 'InvalidTableName', message: RegExp }
}

const samples = join(import.meta.dirname, '..', '..', 'manifests', 'examples')

/** The controller's original sample, changed by `change`; the pinned namespace dropped, as `kubectl apply -n` needs. */
function sample (controller: string, change: (resource: Json) => void): Json {
  const resource = parse(readFileSync(join(samples, `${controller}.yaml`), 'utf8')) as Json
  delete resource.metadata.namespace
  resource.spec ??= {}
  change(resource)
  return resource
}

/** The resource as JSON text, with `metadata` merged in and the literal in place. */
export function resourceJson (refused: RefusedResource, metadata: Json = {}): string {
  const resource = { ...refused.resource, metadata: { ...refused.resource.metadata, ...metadata } }
  const text = JSON.stringify(resource)
  return refused.literal === undefined ? text : text.replace('"<literal>"', refused.literal)
}

const bookStore = (what: string, change: (r: Json) => void, apiServer: RegExp, hook: RegExp, literal?: string): RefusedResource =>
  ({ controller: 'bookstore', what, resource: sample('bookstore', change), apiServer, hook: { refusal: 'InvalidSpec', message: hook }, ...(literal === undefined ? {} : { literal }) })
const podSet = (what: string, change: (r: Json) => void, apiServer: RegExp, hook: RegExp): RefusedResource =>
  ({ controller: 'podset', what, resource: sample('podset', change), apiServer, hook: { refusal: 'InvalidSpec', message: hook } })
const pulsarConsumer = (what: string, change: (r: Json) => void, apiServer: RegExp, hook: RegExp): RefusedResource =>
  ({ controller: 'pulsar-consumer', what, resource: sample('pulsar-consumer', change), apiServer, hook: { refusal: 'InvalidSpec', message: hook } })
/** A name the hook cannot name the children after: a 422 saying why. */
const nameRefused = (controller: string, what: string, change: (r: Json) => void, apiServer: RegExp, hook: RegExp): RefusedResource =>
  ({ controller, what, resource: sample(controller, change), apiServer, hook: { refusal: 422, message: hook } })
const postgresWriter = (what: string, change: (r: Json) => void, apiServer: RegExp, hook: RefusedResource['hook']): RefusedResource =>
  ({ controller: 'postgres-writer', what, resource: sample('postgres-writer', change), apiServer, hook })

export const refusedResources: RefusedResource[] = [
  bookStore('dbSize -1Gi', (r) => { r.spec.bookDB.dbSize = '-1Gi' },
    /spec\.bookDB\.dbSize: Invalid value: "-1Gi": must be at least one byte/, /spec\.bookDB\.dbSize: "-1Gi" must be at least one byte/),
  bookStore('dbSize 0', (r) => { r.spec.bookDB.dbSize = 0 },
    /spec\.bookDB\.dbSize: Invalid value: 0: must be at least one byte/, /spec\.bookDB\.dbSize: 0 must be at least one byte/),
  bookStore('dbSize 100m, a tenth of a byte', (r) => { r.spec.bookDB.dbSize = '100m' },
    /spec\.bookDB\.dbSize: Invalid value: "100m": must be at least one byte/, /spec\.bookDB\.dbSize: "100m" must be at least one byte/),
  bookStore('dbSize 9Ei, more than a quantity holds', (r) => { r.spec.bookDB.dbSize = '9Ei' },
    /spec\.bookDB\.dbSize: Invalid value: "9Ei": must be less than 8Ei \(9223372036854775807 bytes\)/, /spec\.bookDB\.dbSize: "9Ei" must be less than 8Ei/),
  bookStore('dbSize 9007199254740993, an integer beyond 2^53', (r) => { r.spec.bookDB.dbSize = '<literal>' },
    /spec\.bookDB\.dbSize: Invalid value: \d+: a plain number of bytes must be at most 9007199254740991 \(2\^53 - 1\)/,
    /spec\.bookDB\.dbSize: a plain number of bytes must be at most 9007199254740991 \(2\^53 - 1\)/, '9007199254740993'),
  bookStore('dbSize 1e300, a number no integer holds', (r) => { r.spec.bookDB.dbSize = '<literal>' },
    /spec\.bookDB\.dbSize in body must be of type integer/, /spec\.bookDB\.dbSize: a plain number of bytes must be at most 9007199254740991/, '1e300'),
  bookStore('dbSize lots', (r) => { r.spec.bookDB.dbSize = 'lots' },
    /spec\.bookDB\.dbSize: Invalid value: "lots": must be a size such as 1Gi, 500Mi or 2G/, /spec\.bookDB\.dbSize: "lots" must be a size such as 1Gi, 500Mi or 2G/),
  bookStore('bookDB.replicas 51', (r) => { r.spec.bookDB.replicas = 51 },
    /spec\.bookDB\.replicas: Invalid value: 51: spec\.bookDB\.replicas in body should be less than or equal to 50/, /spec\.bookDB\.replicas: Expected integer to be less or equal to 50/),
  bookStore('serviceType Bogus', (r) => { r.spec.bookApp.serviceType = 'Bogus' },
    /spec\.bookApp\.serviceType: Unsupported value: "Bogus"/, /spec\.bookApp\.serviceType: Expected one of "ClusterIP", "NodePort", "LoadBalancer"/),
  bookStore('a repository of 256 characters', (r) => { r.spec.bookApp.repository = `registry.example.com/${'r'.repeat(235)}` },
    /spec\.bookApp\.repository: Too long: may not be (longer|more) than 255/, /spec\.bookApp\.repository: Expected string length less or equal to 255/),
  bookStore('dbSize of 65 characters', (r) => { r.spec.bookDB.dbSize = `${'0'.repeat(62)}1Gi` },
    /spec\.bookDB\.dbSize: Too long: may not be (longer|more) than 64/, /spec\.bookDB\.dbSize: Expected a number of bytes, or a quantity of at most 64 characters such as 1Gi/),
  bookStore('a repository with a no-break space', (r) => { r.spec.bookApp.repository = 'akash125/py\u00a0app' },
    /spec\.bookApp\.repository in body should match '\^\[!-~\]\+\$'/, /spec\.bookApp\.repository: Expected string to match/),
  nameRefused('bookstore', 'a name of 45 characters', (r) => { r.metadata.name = `b${'o'.repeat(44)}` },
    /The BookStore "bo+" is invalid: .*a BookStore name holds at most 44 characters, because its children are named after it/, /BookStore name "bo+" is 45 characters long, but at most 44 characters fit/),
  nameRefused('bookstore', 'a name that is not a DNS label', (r) => { r.metadata.name = 'book.store' },
    /The BookStore "book\.store" is invalid: .*a BookStore name must start with a letter, hold only lowercase letters, digits and '-'/, /BookStore name "book\.store" cannot be used: it must start with a letter/),

  podSet('replicas 2001', (r) => { r.spec = { replicas: 2001 } },
    /spec\.replicas: Invalid value: 2001: spec\.replicas in body should be less than or equal to 2000/, /spec\.replicas: Expected integer to be less or equal to 2000/),
  podSet('a command of 5 arguments', (r) => { r.spec = { command: Array.from({ length: 5 }, () => 'x') } },
    /spec\.command: Too many: 5: must have at most 4 items/, /spec\.command: Expected array length to be less or equal to 4/),
  podSet('a command argument of 97 characters', (r) => { r.spec = { command: ['sh', '-c', 'x'.repeat(97)] } },
    /spec\.command\[2\]: Too long: may not be (longer|more) than 96/, /spec\.command\.2: Expected string length less or equal to 96/),
  podSet('a command argument with a double quote', (r) => { r.spec = { command: ['sh', '-c', 'echo "hi"'] } },
    /spec\.command\[2\] in body should match/, /spec\.command\.2: Expected string to match/),
  podSet('an image reference of 256 characters', (r) => { r.spec = { image: `registry.example.com/${'i'.repeat(235)}` } },
    /spec\.image: Too long: may not be (longer|more) than 255/, /spec\.image: Expected string length less or equal to 255/),
  podSet('replicas -1', (r) => { r.spec = { replicas: -1 } },
    /spec\.replicas: Invalid value: -1: spec\.replicas in body should be greater than or equal to 0/, /spec\.replicas: Expected integer to be greater or equal to 0/),
  podSet('an empty command', (r) => { r.spec = { command: [] } },
    /spec\.command: Invalid value: 0: spec\.command in body should have at least 1 items/, /spec\.command: Expected array length to be greater or equal to 1/),
  podSet('an image with a space', (r) => { r.spec = { image: 'busy box' } },
    /spec\.image in body should match '\^\[-a-zA-Z0-9\._\/:@\]\+\$'/, /spec\.image: Expected string to match/),
  nameRefused('podset', 'a name of 64 characters', (r) => { r.metadata.name = `p${'o'.repeat(63)}` },
    /The PodSet "po+" is invalid: .*a PodSet name holds at most 63 characters, because its pods carry it in their app label/, /PodSet name "po+" is 64 characters long, but at most 63 characters fit/),

  pulsarConsumer('a server address that is not pulsar://', (r) => { r.spec.serverAddress = 'http://localhost:6650' },
    /spec\.serverAddress in body should match/, /spec\.serverAddress: Expected string to match/),
  pulsarConsumer('a server address with a no-break space', (r) => { r.spec.serverAddress = 'pulsar://local\u00a0host:6650' },
    /spec\.serverAddress in body should match/, /spec\.serverAddress: Expected string to match/),
  pulsarConsumer('replicas -1', (r) => { r.spec.replicas = -1 },
    /spec\.replicas: Invalid value: -1: spec\.replicas in body should be greater than or equal to 0/, /spec\.replicas: Expected integer to be greater or equal to 0/),
  pulsarConsumer('a topic of 513 characters', (r) => { r.spec.topic = `persistent://public/default/${'t'.repeat(485)}` },
    /spec\.topic: Too long: may not be (longer|more) than 512/, /spec\.topic: Expected string length less or equal to 512/),
  pulsarConsumer('an empty topic', (r) => { r.spec.topic = '' },
    /spec\.topic: Invalid value: "": spec\.topic in body should be at least 1 chars long/, /spec\.topic: Expected string length greater or equal to 1/),

  postgresWriter('a table that is not a lowercase SQL identifier', (r) => { r.spec.table = 'Students; DROP TABLE x' },
    /spec\.table in body should match '\^\[a-z_\]\[a-z0-9_\]\{0,62\}\$'/, { refusal: 'InvalidTableName', message: /Students; DROP TABLE x/ }),
  postgresWriter('age -1', (r) => { r.spec.age = -1 },
    /spec\.age: Invalid value: -1: spec\.age in body should be greater than or equal to 0/, { refusal: 'InvalidSpec', message: /spec\.age: Expected integer to be greater or equal to 0/ }),
  postgresWriter('age 2147483648, beyond a PostgreSQL integer', (r) => { r.spec.age = 2147483648 },
    /spec\.age: Invalid value: 2147483648: spec\.age in body should be less than or equal to 2147483647/, { refusal: 'InvalidSpec', message: /spec\.age: Expected integer to be less or equal to 2147483647/ }),
  postgresWriter('no country', (r) => { delete r.spec.country },
    /spec\.country: Required value/, { refusal: 'InvalidSpec', message: /spec\.country: Expected required property/ }),
  postgresWriter('a name of 257 characters', (r) => { r.spec.name = 'n'.repeat(257) },
    /spec\.name: Too long: may not be (longer|more) than 256/, { refusal: 'InvalidSpec', message: /spec\.name: Expected string length less or equal to 256/ }),
  postgresWriter('a NUL character in the name', (r) => { r.spec.name = 'al\u0000ex' },
    /spec\.name: Invalid value: .*must not contain a NUL character/, { refusal: 'InvalidSpec', message: /spec\.name: contains a NUL character/ })
]

/** Resources at the edges of what the hooks accept: the API server must accept each, so that its rules are no stricter. */
export const edgeResources: Array<{ controller: string, what: string, resource: Json }> = [
  ...['1.5Gi', '1500m', '+3Gi', '1e9', '7Ei', '9223372036854775806', 9007199254740991].map((dbSize) =>
    ({ controller: 'bookstore', what: `dbSize ${dbSize}`, resource: sample('bookstore', (r) => { r.spec.bookDB.dbSize = dbSize }) })),
  { controller: 'bookstore', what: 'a name of 44 characters', resource: sample('bookstore', (r) => { r.metadata.name = `b${'o'.repeat(43)}` }) },
  { controller: 'podset', what: 'replicas 2000 and a name of 63 characters', resource: sample('podset', (r) => { r.metadata.name = `p${'o'.repeat(62)}`; r.spec = { replicas: 2000 } }) },
  { controller: 'pulsar-consumer', what: 'a name of 253 characters (its children\'s names are shortened with a hash)', resource: sample('pulsar-consumer', (r) => { r.metadata.name = `p${'u'.repeat(252)}` }) },
  { controller: 'postgres-writer', what: 'age 2147483647 and a name of any characters but NUL', resource: sample('postgres-writer', (r) => { r.spec.age = 2147483647; r.spec.name = 'Zoë 🐘 \u00a0"\'\\' }) },
  // What test/answer-bounds.test.ts answers within the answer budget: the worst spec each CRD admits, at every bound.
  ...controllers.flatMap(worstEdge)
]

/**
 * The worst spec `controller`'s CRD admits, under its longest name; none where its schema leaves a field unbounded,
 * which test/answer-bounds.test.ts reports in one line naming the field, so that every other test still runs.
 */
function worstEdge (controller: Controller): Array<{ controller: string, what: string, resource: Json }> {
  try {
    return [{ controller: controller.name, what: 'the worst spec its CRD admits, under its longest name', resource: worstResource(controller.resource) }]
  } catch (error) {
    if (error instanceof UnboundedSpecError) return []
    throw error
  }
}
