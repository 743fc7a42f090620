import { serve } from './runtime/serve.js'

/**
 * The production entry point, the one the image runs: it uses the database it is configured with, and without one
 * (when a controller needs it) it does not start. `npm start` runs scripts/start.ts instead.
 */
await serve()
