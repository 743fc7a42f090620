import type { Deployment, StatefulSet } from 'kubernetes-types/apps/v1.js'
import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js'
import type { HookContext } from '../controller.js'
import { unprocessableSpec, type HookError } from '../errors.js'
import { observedByName } from '../wire/objects.js'
import type { CompositeRequest, CompositeResponse } from '../wire/schemas.js'
import { planVolumes, type DesiredSize } from './claims.js'
import { childNames, desiredChildren } from './desired-children.js'
import { canonicalBytes, MAX_BYTES, parseQuantity, wholeBytes } from './quantity.js'
import { bookStoreResource, type BookStoreSpec } from './resource.js'
import { bookStoreStatus } from './status.js'

/** The pure core of BookStore: the desired children of a parent, from its spec and the claims it already has. */

function desiredSize (dbSize: BookStoreSpec['bookDB']['dbSize']): DesiredSize {
  const problem = (detail: string): HookError => unprocessableSpec(bookStoreResource.kind, [`spec.bookDB.dbSize: ${JSON.stringify(dbSize)} ${detail}`])
  if (typeof dbSize === 'number' && !Number.isSafeInteger(dbSize)) throw problem('is too large for a JSON number: write it with a suffix, e.g. 8Ti')
  const quantity = parseQuantity(String(dbSize))
  if (quantity === undefined) throw problem('is not a quantity: write a size such as 1Gi, 500Mi or 2G')
  const bytes = wholeBytes(quantity)
  if (quantity.nanos <= 0n) throw problem('must be larger than zero')
  if (bytes === undefined) throw problem('is not a whole number of bytes')
  if (bytes > MAX_BYTES) throw problem('is larger than a Kubernetes quantity can hold (8Ei)')
  return { text: canonicalBytes(bytes, quantity.format), quantity }
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
