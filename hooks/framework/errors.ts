/** A request the server understood but cannot act on; answered with its status code and message. */
export class HookError extends Error {
  constructor (readonly statusCode: 400 | 401 | 408 | 413 | 422 | 503, message: string) {
    super(message)
    this.name = 'HookError'
  }
}

/**
 * A parent of another kind than the hook's resource. Its message says which kind; the server, which knows every
 * controller, adds the hook that serves it.
 */
export class WrongKindError extends HookError {
  constructor (readonly field: 'parent' | 'object', readonly sent: { apiVersion: string, kind: string }, readonly served: { apiVersion: string, kind: string }) {
    super(400, `${field} is ${sent.apiVersion} ${sent.kind}, but this hook serves ${served.apiVersion} ${served.kind}`)
    this.name = 'WrongKindError'
  }
}

/**
 * A parent whose spec the hook cannot serve. The server answers it on the resource, Ready=False with `reason` and
 * this message, where it can keep every child as it is (invalid-spec.ts); otherwise it is a 422, shown by
 * Metacontroller in a SyncError event.
 */
export class UnservableSpecError extends HookError {
  constructor (readonly reason: 'InvalidSpec' | 'AnswerTooLarge', message: string) {
    super(422, message)
    this.name = 'UnservableSpecError'
  }
}

/** A parent whose spec the hook cannot interpret: reason InvalidSpec, the message naming each bad field. */
export class InvalidSpecError extends UnservableSpecError {
  constructor (readonly kind: string, readonly problems: string[]) {
    super('InvalidSpec', `${kind} spec cannot be used: ${problems.join('; ')}. Fix the custom resource; until then the hook changes nothing it manages.`)
    this.name = 'InvalidSpecError'
  }
}

/** The error for a parent whose spec has these problems, each `spec.<field>: <what is wrong>`. */
export function unprocessableSpec (kind: string, problems: string[]): InvalidSpecError {
  return new InvalidSpecError(kind, problems)
}

/**
 * A controller defined so that it cannot work (a name that the API server or kubectl would refuse, two columns of one
 * name), thrown as its module loads: the development commands say it in one line.
 */
export class DefinitionError extends Error {}
