import type { KindModel } from './model.js'

/**
 * A kind the API server stores as it was applied, with no defaults, no generation and no status, as it does a
 * ConfigMap; every kind without a model of its own is taken to be one.
 */
export const storedAsApplied: KindModel = {
  hasGeneration: false,
  defaulted: (spec) => spec,
  completed: (spec) => spec,
  deletion: { gracePeriodSeconds: 0, finalizers: ['foregroundDeletion'] },
  managedFields: () => []
}
