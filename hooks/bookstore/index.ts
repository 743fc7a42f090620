import type { CompositeController } from '../controller.js'
import { HookError, unprocessableSpec } from '../errors.js'
import { specParser } from '../spec.js'
import { observedByName } from '../wire/objects.js'
import type { CompositeRequest, CompositeResponse } from '../wire/schemas.js'
import { planVolumes, type DesiredSize } from './claims.js'
import { childNames, desiredChildren } from './desired-children.js'
import { canonicalBytes, MAX_BYTES, parseQuantity, wholeBytes } from './quantity.js'
import { BookStoreSpecSchema, bookStoreResource, MAX_NAME_LENGTH, type BookStoreSpec } from './resource.js'
import { bookStoreStatus } from './status.js'

const parseSpec = specParser(BookStoreSpecSchema, bookStoreResource.kind)

const NAME_PATTERN = /^[a-z]([-a-z0-9]*[a-z0-9])?$/

/** The children's names must be valid Service names (DNS labels) and leave room for the StatefulSet's Pod labels. */
function checkName (name: string | undefined): string {
  if (name !== undefined && NAME_PATTERN.test(name) && name.length <= MAX_NAME_LENGTH) return name
  throw new HookError(422, `${bookStoreResource.kind} name ${JSON.stringify(name)} cannot name its children: it must start with a letter, ` +
    `hold only lowercase letters, digits and '-', and have at most ${MAX_NAME_LENGTH} characters (Service <name>-bookstore, ` +
    `StatefulSet <name>-mongodb). Create the ${bookStoreResource.kind} again under such a name.`)
}

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

function syncBookStore (request: CompositeRequest, now: string): CompositeResponse {
  const { parent, children } = request
  const name = checkName(parent.metadata.name)
  const spec = parseSpec(parent.spec)
  const names = childNames(name)
  const volumes = planVolumes(names.db, {
    replicas: spec.bookDB.replicas,
    size: desiredSize(spec.bookDB.dbSize),
    storageClassName: spec.bookDB.storageClassName
  }, observedByName(children, 'PersistentVolumeClaim', 'v1'))
  const statefulSet = observedByName(children, 'StatefulSet', 'apps/v1').get(names.db)
  const deployment = observedByName(children, 'Deployment', 'apps/v1').get(names.app)
  return {
    status: bookStoreStatus(parent, spec, names, volumes, { deployment, statefulSet }, now),
    children: desiredChildren(parent, spec, volumes, statefulSet)
  }
}

/** BookStore: a MongoDB StatefulSet with its claims and Service, and the bookstore app's Deployment and Service. */
export const bookStore: CompositeController = {
  type: 'composite',
  name: 'bookstore',
  resource: bookStoreResource,
  hasFinalize: false,
  childResources: [
    { apiVersion: 'v1', resource: 'services', updateStrategy: 'InPlace' },
    { apiVersion: 'apps/v1', resource: 'statefulsets', updateStrategy: 'InPlace' },
    { apiVersion: 'v1', resource: 'persistentvolumeclaims', updateStrategy: 'InPlace' },
    { apiVersion: 'apps/v1', resource: 'deployments', updateStrategy: 'InPlace' }
  ],
  hooks: () => ({ sync: (request, { now }) => syncBookStore(request, now) })
}
