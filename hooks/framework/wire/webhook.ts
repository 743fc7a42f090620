/**
 * How long Metacontroller waits for a hook's answer, as every generated controller sets it (`webhook.timeout`). A hook
 * that answers later is retried with backoff, while its first call may still be running.
 */
export const WEBHOOK_TIMEOUT_SECONDS = 10
