import { createHash, type Hash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import type { Controller, HookName } from './controller.js'

/**
 * Webhook ETags, as Metacontroller v4 uses them (`etag` on a hook; pkg/hooks/webhook_etag.go): it keeps, per hook and
 * parent (kind, namespace, name), the last 200 answer that carried an `ETag`, sends that ETag back in
 * `If-None-Match`, and on a 304 reuses the answer it kept.
 *
 * Here an ETag names the request itself: a digest of the hook's identity (the build that answers, the controller, the
 * hook) and of the request's bytes as they arrive. Equal ETags mean the same code got a byte-identical request, so a
 * 304 needs neither decoding nor parsing. That is sound only where the answer is a function of the request: a
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
 * The build that answers: a digest of the server's code (the folder this module was loaded from, hooks/ or dist/),
 * of the locked dependencies and of the Node.js version. A restart of the same build gives the same ETags, so
 * Metacontroller's cache survives it; another build gives others, so no answer of an older build is ever reused.
 */
export function buildIdentity (): string {
  if (build !== undefined) return build
  const digest = createHash('sha256').update(`node ${process.version}\n`)
  const code = import.meta.dirname
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

/** A new digest of one hook's requests: fed the body's bytes, it gives the ETag with `etag()`. */
export function requestDigest (controller: Controller, hook: HookName): () => Hash {
  const identity = `${buildIdentity()}\n${controller.name}\n${hook}\n`
  return () => createHash('sha256').update(identity)
}

/** The ETag (a strong one) of a digest fed a whole body. */
export function etag (digest: Hash): string {
  return `"${digest.digest('base64url')}"`
}

/** `If-None-Match` holds `tag`: a list of entity tags compared weakly (RFC 9110 §13.1.2); `*` is not honoured. */
export function noneMatchHolds (header: string | undefined, tag: string): boolean {
  if (header === undefined) return false
  if (header === tag) return true
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === tag)
}
