import type { Deployment, StatefulSet } from 'kubernetes-types/apps/v1.js'
import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js'
import { observedByName, unprocessableSpec, type ApplyRule, type CompositeRequest, type CompositeResponse, type HookContext, type HookError } from '../framework/index.js'
import { planVolumes, type DesiredSize } from './claims.js'
import { childNames, desiredChildren } from './desired-children.js'
import { bytesRoundedUp, canonicalBytes, compareQuantities, MAX_BYTES, ofBytes, parseQuantity } from './quantity.js'
import { bookStoreResource, DB_SIZE_RULES, type BookStoreSpec } from './resource.js'
import { bookStoreStatus } from './status.js'

/** The pure core of BookStore: the desired children of a parent, from its spec and the claims it already has. */

/** The size every claim is asked for at least, from dbSize; an InvalidSpecError saying what DB_SIZE_RULES says, as the API server would. */
function desiredSize (dbSize: BookStoreSpec['bookDB']['dbSize']): DesiredSize {
  const problem = (rule: ApplyRule, value?: string): HookError =>
    unprocessableSpec(bookStoreResource.kind, [`spec.bookDB.dbSize: ${value === undefined ? '' : `${value} `}${rule.message}`])
  // JSON.parse has already rounded such a number: printing it would show another value than the one sent.
  if (typeof dbSize === 'number' && !Number.isSafeInteger(dbSize)) throw problem(DB_SIZE_RULES.exactNumber)
  const shown = JSON.stringify(dbSize)
  const quantity = parseQuantity(String(dbSize))
  if (quantity === undefined) throw problem(DB_SIZE_RULES.quantity, shown)
  if (compareQuantities(quantity, ofBytes(1n, 'DecimalSI')) < 0) throw problem(DB_SIZE_RULES.atLeastOneByte, shown)
  if (compareQuantities(quantity, ofBytes(MAX_BYTES, 'DecimalSI')) >= 0) throw problem(DB_SIZE_RULES.belowMaximum, shown)
  const bytes = bytesRoundedUp(quantity)
  return { text: canonicalBytes(bytes, quantity.format), quantity: ofBytes(bytes, quantity.format) }
}

export function syncBookStore (request: CompositeRequest, { parent, now }: HookContext<typeof bookStoreResource>): CompositeResponse {
  const { children } = request
  const spec = parent.spec()
  const names = childNames(parent.name)
  const volumes = planVolumes(names.db, {
    replicas: spec.bookDB.replicas,
    size: desiredSize(spec.bookDB.dbSize),
    storageClassName: spec.bookDB.storageClassName
  }, observedByName<PersistentVolumeClaim>(children, 'PersistentVolumeClaim', 'v1'))
  const statefulSet = observedByName<StatefulSet>(children, 'StatefulSet', 'apps/v1').get(names.db)
  const deployment = observedByName<Deployment>(children, 'Deployment', 'apps/v1').get(names.app)
  return {
    status: bookStoreStatus(parent, now, spec, names, volumes, { deployment, statefulSet }),
    children: desiredChildren(parent, spec, volumes, statefulSet)
  }
}
