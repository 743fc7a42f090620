/** A request the server understood but cannot act on; answered with its status code and message. */
export class HookError extends Error {
  constructor (readonly statusCode: 400 | 401 | 413 | 422, message: string) {
    super(message)
    this.name = 'HookError'
  }
}

/** A parent whose spec the hook cannot interpret: 422, shown by Metacontroller in a SyncError event. */
export function unprocessableSpec (kind: string, problems: string[]): HookError {
  return new HookError(422, `${kind} spec cannot be used: ${problems.join('; ')}. Fix the custom resource; its children are left as they are.`)
}
