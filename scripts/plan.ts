import { controllers } from '../hooks/controllers.js'
import { commandArguments } from '../dev/command.js'
import { ConfigError, loadConfig } from '../hooks/runtime/config.js'
import { apiServer, KubeconfigError } from '../dev/plan/kubeconfig.js'
import { KubeApi } from '../dev/plan/kube-api.js'
import { once } from 'node:events'
import { planCluster, planHeading } from '../dev/plan/plan-cluster.js'
import { EXIT_MEANINGS, JsonReport, TextReport } from '../dev/plan/report.js'

/**
 * npm run -s plan -- [--kubeconfig <file>] [--context <name>] [--controller <name>]... [-n <namespace>]
 *                    [-l <label selector>] [-o text|json]
 * What this checkout's hooks would make Metacontroller do to each parent in a live cluster, and what PostgresWriter
 * would write, before a release is deployed. Reads with get and list only. Exit codes as `kubectl diff`: 0 nothing
 * would change, 1 something would, 2 the plan could not be made, 3 the new code refuses or fails on some parents.
 */

const usage = `usage: npm run -s plan -- [--kubeconfig <file>] [--context <name>] [--controller <name>]... [-n <namespace>] [-l <label selector>] [-o text|json] [--version]
  What this checkout's hooks would make Metacontroller do to each parent in a live cluster (docs/plan.md); reads only.
  PostgreSQL for PostgresWriter: the hook server's settings (DATABASE_URL, or PSQL_* or PG*; PG_SCHEMA, PG_TABLE_ALLOWLIST, PG_AUTO_CREATE_TABLES)
exit codes: ${Object.entries(EXIT_MEANINGS).map(([code, meaning]) => `${code} ${meaning}`).join('; ')}`

/** Set once the flags are read: CI reads the JSON, so a plan that cannot be made is JSON too, with its error. */
let json = false

function fail (message: string): never {
  process.stderr.write(`${message}\n`)
  if (json) process.stdout.write(`${JSON.stringify({ controllers: [], errors: [message], exitCode: 2 }, null, 2)}\n`)
  process.exit(2)
}

const { values: options } = commandArguments({
  usage,
  options: {
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    controller: { type: 'string', multiple: true },
    namespace: { type: 'string', short: 'n' },
    selector: { type: 'string', short: 'l' },
    output: { type: 'string', short: 'o', default: 'text' }
  },
  version: true
})
if (options.output !== 'text' && options.output !== 'json') fail(`--output ${options.output}: give text or json`)
json = options.output === 'json'

const names = (options.controller ?? []).flatMap((name) => name.split(',')).filter((name) => name !== '')
const unknown = names.filter((name) => !controllers.some((controller) => controller.name === name))
if (unknown.length > 0) fail(`--controller ${unknown.join(', ')}: this checkout has no such controller; it has ${controllers.map((controller) => controller.name).join(', ')}`)
const chosen = names.length === 0 ? controllers : controllers.filter((controller) => names.includes(controller.name))

let config
try {
  config = loadConfig(process.env)
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  fail(`the database settings the plan shares with the hook server are not valid: ${error.message}`)
}

let server
try {
  server = await apiServer({ kubeconfig: options.kubeconfig, context: options.context })
} catch (error) {
  if (!(error instanceof KubeconfigError)) throw error
  fail(error.message)
}

const terminal = process.stderr.isTTY
const progress = terminal ? (message: string) => { process.stderr.write(`\r\x1b[K${message}`) } : undefined
const api = new KubeApi(server)
/** Writes to stdout, and waits while what it holds has not drained. */
async function write (text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, 'drain')
}
try {
  const scope = { namespace: options.namespace, selector: options.selector }
  const now = new Date()
  const heading = planHeading(api, scope, now)
  const report = json ? new JsonReport(heading, write) : new TextReport(heading, write)
  const code = await planCluster({ api, controllers: chosen, scope, config, now, progress }, {
    parent: async (controller, plan) => { await report.parent(controller, plan) },
    controller: async (totals) => { await report.controller(totals) },
    end: async (controllers, errors, exitCode) => {
      if (terminal) process.stderr.write('\r\x1b[K')
      await report.end(controllers, errors, exitCode)
    }
  })
  process.exitCode = code
} catch (error) {
  if (terminal) process.stderr.write('\r\x1b[K')
  fail(`the plan failed: ${(error as Error).stack ?? String(error)}`)
} finally {
  api.close()
}
