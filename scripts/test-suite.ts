import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { commandArguments, NODE_TEST_OPTIONS, NODE_TEST_USAGE, nodeTestFlags } from '../dev/command.js'

/**
 * `npm run test:rules`, `test:image`, `test:node` and `test:e2e`: a suite that needs something built first, then its
 * tests, with node:test's flags passed on. The suite is the first argument, which package.json gives.
 */

interface Suite {
  about: string
  /** Scripts run in order before the tests. */
  build: string[]
  env?: Record<string, string>
  /** node:test flags of the suite's own. */
  flags?: string[]
  files: () => string[]
}

const root = join(import.meta.dirname, '..')
const testsIn = (dir: string): string[] => readdirSync(join(root, dir)).filter((name) => name.endsWith('.test.ts')).sort().map((name) => join(dir, name))

const SUITES: Record<string, Suite> = {
  rules: {
    about: 'promtool\'s checks and unit tests of the shipped alerts, promtool first built from the Prometheus Go module',
    build: ['scripts/build-e2e-binaries.sh'],
    env: { E2E_ONLY: 'promtool' },
    files: () => testsIn('test/rules')
  },
  image: {
    about: 'the image, built with buildah from the Dockerfile (as root), then started',
    build: ['scripts/build-image.sh'],
    files: () => testsIn('test/image')
  },
  node: {
    about: 'the image\'s pods on a real node (containerd, runc, kubelet, kube-scheduler, kube-proxy) beside the control plane, as root',
    build: ['scripts/install-node-packages.sh', 'scripts/build-image.sh', 'scripts/build-e2e-binaries.sh'],
    // Each file starts a node of its own, on the same pod network: one at a time.
    flags: ['--test-concurrency=1'],
    files: () => testsIn('test/e2e/node')
  },
  e2e: {
    about: 'the end-to-end suite, on a control plane and a Metacontroller first built from Go modules',
    build: ['scripts/build-e2e-binaries.sh'],
    files: () => [...testsIn('test/e2e'), 'test/e2e/rig/metacontroller.test.ts']
  }
}

const [name = '', ...args] = process.argv.slice(2)
const suite = SUITES[name]
if (suite === undefined) {
  process.stderr.write(`no test suite is named ${JSON.stringify(name)}: the suites are ${Object.keys(SUITES).join(', ')}\n`)
  process.exit(2)
}
const { values } = commandArguments({
  usage: `usage: npm run test:${name} -- [--test-name-pattern=<pattern>]...
  Runs ${suite.build.join(', then ')}, then ${suite.about}.
${NODE_TEST_USAGE}`,
  options: NODE_TEST_OPTIONS
}, args)

async function run (command: string, commandArgs: string[], env: Record<string, string> = {}): Promise<number> {
  const child = spawn(command, commandArgs, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => { child.kill(signal) })
  return await new Promise((resolve) => child.on('exit', (code, signal) => { resolve(code ?? (signal === null ? 1 : 128)) }))
}

for (const script of suite.build) {
  const built = await run('bash', [script], suite.env)
  if (built !== 0) process.exit(built)
}
process.exit(await run(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...suite.flags ?? [], ...nodeTestFlags(values), ...suite.files()]))
