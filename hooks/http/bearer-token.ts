import { createHash, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import type { FastifyBaseLogger } from 'fastify'

/**
 * The bearer tokens a hook call may carry. They come from HOOKS_BEARER_TOKEN, or from HOOKS_BEARER_TOKEN_FILE, one
 * per line, re-read every few seconds: a Secret mounted there is rotated by listing the old and the new token while
 * Metacontroller still sends the old one, then the new one alone, and no pod restarts.
 */

export interface BearerTokenSource {
  /** The variable the tokens came from, named in messages. */
  variable: 'HOOKS_BEARER_TOKEN' | 'HOOKS_BEARER_TOKEN_FILE'
  /** HOOKS_BEARER_TOKEN_FILE's path, re-read while the server runs. */
  file: string | undefined
  tokens: string[]
}

/** How often the file is re-read. A Secret volume itself changes only on the kubelet's sync, about once a minute. */
export const RELOAD_INTERVAL_MS = 5000

/** The example token an earlier version of manifests/overlays/bearer-token shipped: public, so never accepted. */
const PUBLISHED_EXAMPLE = 'replace-me-with-a-long-random-token'

/** The tokens in a file's text, one per line (blank lines ignored); throws with what is wrong and what to do. */
export function parseTokens (text: string, source: string): string[] {
  const tokens = text.split('\n').map((line) => line.trim()).filter((line) => line !== '')
  if (tokens.length === 0) throw new Error(`${source} holds no token: write one per line, such as the output of \`openssl rand -hex 32\``)
  if (tokens.includes(PUBLISHED_EXAMPLE)) {
    throw new Error(`${source} holds the example token of an earlier manifests/overlays/bearer-token, which is public: generate one with \`openssl rand -hex 32\` (docs/operations.md, "Authenticate Metacontroller with a bearer token")`)
  }
  return tokens
}

/** A short, one-way name for a token, for the log: `printf %s "$token" | sha256sum | cut -c1-12` gives the same. */
export function fingerprint (token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 12)
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest()

export class BearerTokens {
  private digests: Buffer[] = []
  private fingerprints = ''
  private lastProblem: string | undefined
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly source: BearerTokenSource, private readonly log: FastifyBaseLogger) {
    this.use(source.tokens)
    log.info({ fingerprints: this.fingerprints }, `hooks need a bearer token: ${this.describe()}`)
  }

  /** What a refused caller is told to send. */
  get expected (): string {
    return this.source.file === undefined ? 'HOOKS_BEARER_TOKEN' : `a token listed in HOOKS_BEARER_TOKEN_FILE (${this.source.file})`
  }

  /** Whether an Authorization header carries one of the tokens. */
  accepts (authorization: string | undefined): boolean {
    // Hashing both sides gives equal lengths, and every token is compared: the time taken says nothing of the tokens.
    const sent = digest(authorization ?? '')
    let accepted = false
    for (const expected of this.digests) accepted = timingSafeEqual(sent, expected) || accepted
    return accepted
  }

  /** Re-reads the file every RELOAD_INTERVAL_MS, until stop(). */
  start (): void {
    if (this.source.file === undefined || this.timer !== undefined) return
    this.timer = setInterval(() => { void this.reload() }, RELOAD_INTERVAL_MS)
    this.timer.unref()
  }

  stop (): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  /** Reads the file again; a file that cannot be read or holds no usable token leaves the tokens as they were. */
  async reload (): Promise<void> {
    const file = this.source.file
    if (file === undefined) return
    let tokens: string[]
    try {
      tokens = parseTokens(await readFile(file, 'utf8'), `HOOKS_BEARER_TOKEN_FILE ${file}`)
    } catch (error) {
      const problem = error instanceof Error && 'code' in error ? `cannot read HOOKS_BEARER_TOKEN_FILE ${file}: ${String(error.code)}` : (error as Error).message
      // Once per problem: the file is read every few seconds.
      if (problem !== this.lastProblem) this.log.error(`${problem}; the ${this.digests.length} token(s) read before are still accepted`)
      this.lastProblem = problem
      return
    }
    this.lastProblem = undefined
    if (tokens.map(fingerprint).join(', ') === this.fingerprints) return
    this.use(tokens)
    this.log.info({ fingerprints: this.fingerprints }, `bearer tokens reloaded: ${this.describe()}`)
  }

  private use (tokens: string[]): void {
    this.digests = tokens.map((token) => digest(`Bearer ${token}`))
    this.fingerprints = tokens.map(fingerprint).join(', ')
  }

  private describe (): string {
    const from = this.source.file === undefined ? this.source.variable : `${this.source.variable} ${this.source.file}`
    return `${this.digests.length} accepted from ${from} (fingerprints ${this.fingerprints})`
  }
}
