import assert from 'node:assert/strict'
import { LAST_APPLIED_ANNOTATION } from '../../hooks/framework/wire/apply.js'

/** What a hook answers for a parent whose spec it cannot interpret (hooks/framework/invalid-spec.ts), as the tests check it. */

type Json = Record<string, any>

/** The Ready condition of an answer that says InvalidSpec; fails, showing the answer, unless it is a 200 saying so. */
export function invalidSpecReady (statusCode: number, body: Json, where = ''): Json {
  const ready = body.status?.conditions?.find((condition: Json) => condition.type === 'Ready')
  assert.deepEqual([statusCode, ready?.status, ready?.reason], [200, 'False', 'InvalidSpec'], `${where}: ${JSON.stringify(body).slice(0, 500)}`)
  return ready
}

/** The last-applied configuration of each observed child (or attachment) not being deleted: what an answer that keeps them holds. */
export function lastAppliedChildren (request: Json): Json[] {
  const groups: Json = request.children ?? request.attachments
  return Object.values(groups).flatMap((group: Json) => Object.values(group))
    .filter((child: Json) => child.metadata.deletionTimestamp === undefined)
    .map((child: Json) => JSON.parse(child.metadata.annotations[LAST_APPLIED_ANNOTATION]))
}
