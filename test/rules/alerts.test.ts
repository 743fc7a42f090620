/**
 * promtool on the shipped rules (manifests/monitoring/prometheus-rule.yaml): `promtool check rules`, then
 * `promtool test rules` with the cases of alert-cases.ts, one test per alert, each firing when it should and silent
 * when it should. promtool is built from the Prometheus Go module by scripts/build-e2e-binaries.sh: run these with
 * `npm run test:rules`, which builds it first.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { stringify } from 'yaml'
import { shippedAlerts, shippedRuleGroups } from '../helpers/monitoring.js'
import { ALERT_CASES, promtoolTests } from './alert-cases.js'

const root = join(import.meta.dirname, '..', '..')
const promtool = join(process.env.E2E_BIN_DIR ?? join(root, '.cache', 'e2e-bin'), 'promtool')

function run (dir: string, args: string[]): string {
  const result = spawnSync(promtool, args, { cwd: dir, encoding: 'utf8' })
  assert.equal(result.status, 0, `promtool ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`)
  return result.stdout + result.stderr
}

describe('the shipped alerts under promtool', () => {
  let dir = ''
  before(async () => {
    assert.ok(existsSync(promtool), `${promtool} is missing: run \`npm run test:rules\`, which builds it`)
    dir = await mkdtemp(join(tmpdir(), 'rules-'))
    await writeFile(join(dir, 'rules.yaml'), stringify({ groups: shippedRuleGroups() }, { lineWidth: 0 }))
  })
  after(async () => { await rm(dir, { recursive: true, force: true }) })

  it('promtool check rules: they load, with no warning', () => {
    const output = run(dir, ['check', 'rules', 'rules.yaml'])
    assert.match(output, /SUCCESS: \d+ rules found/)
    assert.doesNotMatch(output, /WARNING|lint/i)
  })

  for (const rule of shippedAlerts()) {
    it(`${rule.alert}: ${(ALERT_CASES[rule.alert] ?? []).map((test) => test.name).join('; ')}`, async () => {
      const file = `${rule.alert}.test.yaml`
      await writeFile(join(dir, file), stringify(promtoolTests(rule, 'rules.yaml'), { lineWidth: 0 }))
      assert.match(run(dir, ['test', 'rules', file]), /SUCCESS/)
    })
  }
})
