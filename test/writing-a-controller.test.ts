import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { runInNewContext } from 'node:vm'
import * as typebox from '@sinclair/typebox'
import { transformSync } from 'esbuild'
import * as framework from '../hooks/framework/index.js'
import type { CustomResource } from '../hooks/framework/custom-resource.js'
import { worstResource } from '../dev/worst-spec.js'

/**
 * docs/writing-a-controller.md, as a reader copies it: its code, taken from the page (so that this test follows the
 * page as it changes), meets the rules that `npm test` holds a controller to.
 */

const root = join(import.meta.dirname, '..')
const page = readFileSync(join(root, 'docs', 'writing-a-controller.md'), 'utf8')

/** What the page's TypeScript imports may name: the modules a controller's resource.ts imports. */
const modules: Record<string, Record<string, unknown>> = { '@sinclair/typebox': typebox, '../framework/index.js': framework }

/** The value of `name` after running the page's ts block that exports it, its imports bound to the real modules. */
function evaluateBlock (name: string): unknown {
  const block = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1] as string).find((code) => code.includes(`export const ${name} `))
  assert.ok(block !== undefined, `the page has a ts block that exports ${name}`)
  const scope: Record<string, unknown> = {}
  for (const [, names, from] of block.matchAll(/^import \{ (.+) \} from '(.+)'$/gm)) {
    const module = modules[from as string]
    assert.ok(module !== undefined, `the block imports ${from}, which a controller's resource.ts does not`)
    for (const imported of (names as string).split(', ').filter((entry) => !entry.startsWith('type '))) {
      assert.ok(imported in module, `${from} exports no ${imported}`)
      scope[imported] = module[imported]
    }
  }
  const { code } = transformSync(block.replace(/^import .*$/gm, '').replace(/^export /gm, ''), { loader: 'ts' })
  return runInNewContext(`${code}\n${name}`, scope)
}

test('the WebApp resource.ts of the page is bounded as answer-bounds asks, its patterned field included, and accepts its example', () => {
  const resource = evaluateBlock('webAppResource') as CustomResource
  const worst = worstResource(resource)
  assert.deepEqual(resource.parseSpec(worst.spec), worst.spec, 'the worst spec is one the resource accepts')
  assert.equal((worst.spec as { memory: string }).memory, '999999gb')
  // Made in the block's own realm: compared as JSON.
  const example = JSON.parse(JSON.stringify(resource.exampleSpec))
  assert.ok(example !== undefined)
  assert.deepEqual(resource.parseSpec(example), example)
})
