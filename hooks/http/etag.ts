import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'
import { xxh3 } from '@node-rs/xxhash'
import type { Controller, HookName } from '../framework/controller.js'

/**
 * Webhook ETags, as Metacontroller v4 uses them (`etag` on a hook; pkg/hooks/webhook_etag.go): it keeps, per hook and
 * parent (kind, namespace, name), the last 200 answer that carried an `ETag`, sends that ETag back in
 * `If-None-Match`, and on a 304 reuses the answer it kept.
 *
 * Here an ETag names the request itself: the hook's identity (the build that answers, the configuration that can change
 * its answer to the same bytes, the controller, the hook) and a digest of the request's bytes. Equal
 * ETags mean the same code, configured alike, got a byte-identical request, so a 304 needs neither decoding nor
 * parsing, and is never the answer to a request this server would refuse. That is sound only where the answer is a function of the request: a
 * controller that declares no I/O (`needs: []`). Its hooks get no configuration and no state, only the clock, which
 * stamps `lastTransitionTime` on a condition whose status changes (wire/conditions.ts); a repeated request then gets
 * the answer kept from its first call, stamped when that change was first seen, which is the truer time anyway.
 * PostgresWriter's answer depends on the database (a resync repairs a row changed behind its back), so it has none.
 */

/** Whether a controller's answers are a function of its requests, so that its hooks carry ETags. */
export function answersFromRequestAlone (controller: Controller): boolean {
  return controller.needs.length === 0
}

let build: string | undefined

/**
 * The build that answers: a digest of the server's code (hooks/ from source, whose http/ holds this module; dist/ as
 * built, where this module is bundled into server.js), of the locked dependencies and of the Node.js version. A
 * restart of the same build gives the same ETags, so Metacontroller's cache survives it; another build gives others, so
 * no answer of an older build is ever reused.
 */
export function buildIdentity (): string {
  if (build !== undefined) return build
  const digest = createHash('sha256').update(`node ${process.version}\n`)
  const code = basename(import.meta.dirname) === 'http' ? dirname(import.meta.dirname) : import.meta.dirname
  const files = (readdirSync(code, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort()
  const lock = join(code, '..', 'package-lock.json')
  for (const file of existsSync(lock) ? [...files, lock] : files) {
    digest.update(`${relative(code, file)}\n`).update(readFileSync(file))
  }
  build = digest.digest('hex')
  return build
}

/** The ETag of a request's bytes, given the chunks they arrived in. */
export type RequestTag = (chunks: readonly Uint8Array[]) => string

/**
 * How one hook's requests are tagged: the ETag of a request's bytes, from the chunks they arrived in, once they all
 * have. The digest is XXH3's 64-bit hash, in native code that reads each chunk where it lies: 0.055 ms for a 544 KiB
 * body, half what XXH64 in WebAssembly took (it copies each chunk into its memory first) and an eighth of SHA-256. It
 * only has to tell a request about a parent from the next one Metacontroller sends about the same parent, which 64
 * bits do: two different requests share a digest once in 2^64. A collision made on purpose by a writer of the parent
 * or its children would only make Metacontroller keep applying its answer to the parent's previous request until the
 * next change. `bodyLimit` (HOOKS_BODY_LIMIT) is the one setting that changes the answer to the same bytes once they
 * have arrived: it bounds the JSON values a body may have, checked when the body is parsed, and the size of the answer
 * (framework/answer-budget.ts).
 */
export function requestTag (controller: Controller, hook: HookName, bodyLimit: number): RequestTag {
  const identity = createHash('sha256').update(`${buildIdentity()}\n${controller.name}\n${hook}\nHOOKS_BODY_LIMIT=${bodyLimit}\n`).digest('base64url').slice(0, 16)
  return (chunks) => {
    for (const chunk of chunks) digestState.update(chunk)
    const digest = digestState.digest()
    digestState.reset()
    return `"${identity}-${digest.toString(16).padStart(16, '0')}"`
  }
}

/**
 * The one native state every tag is computed in: a tag is computed at once, from start to end, so no two share it, and
 * a state per request cost more CPU than digesting a 1-pod PodSet's 8 KB.
 */
const digestState = xxh3.Xxh3.withSeed()

/** `If-None-Match` holds `tag`: a list of entity tags compared weakly (RFC 9110 §13.1.2); `*` is not honoured. */
export function noneMatchHolds (header: string | undefined, tag: string): boolean {
  if (header === undefined) return false
  if (header === tag) return true
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === tag)
}
