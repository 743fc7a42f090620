import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js'
import type { KubernetesObject } from '../framework/index.js'
import { compareQuantities, parseQuantity, type Quantity } from './quantity.js'

/**
 * The database claims: one per replica, named as the StatefulSet names them, sized so that no volume ever shrinks
 * and none is dropped by a scale-down. The API server resizes only bound claims, so a claim not bound yet keeps its
 * size until it is (its binding triggers the sync that grows it).
 */

/** The StatefulSet's claim template; its claims are `data-<statefulset>-<ordinal>`. */
export const CLAIM_TEMPLATE_NAME = 'data'

export interface DesiredSize {
  /** The canonical string of `spec.bookDB.dbSize`. */
  text: string
  quantity: Quantity
}

type ObservedClaim = KubernetesObject & PersistentVolumeClaim

export interface ClaimPlan {
  name: string
  /**
   * What the claim requests: the larger of dbSize and the observed request (whose string is then kept as is), or the
   * observed request while the claim is not bound.
   */
  storage: string
  /** The observed claim's class (immutable), or the spec's for a new claim; undefined leaves it to the cluster. */
  storageClassName: string | undefined
}

/** A claim that keeps its observed size for now. */
export interface KeptSize {
  name: string
  requested: string
}

export interface VolumePlan {
  /** The canonical dbSize: what new claims, and the claim template of a new StatefulSet, request. */
  dbSize: string
  claims: ClaimPlan[]
  /** Claims that request more than dbSize: they keep their size. */
  refusedShrinks: KeptSize[]
  /** Claims that request less than dbSize but are not bound yet: they grow once bound. */
  pendingResizes: KeptSize[]
  /**
   * Claims whose requested storage is not a quantity (`requested` says what it is instead). No API server stores
   * such a claim, so only a hand-made request has one; it is asked for dbSize, which the API server refuses if that
   * would make a bound claim smaller, so no volume shrinks either way.
   */
  unreadableSizes: KeptSize[]
  /** The largest size a claim is requested at (dbSize when there is no claim). */
  volumeSize: string
}

function claimName (statefulSetName: string, ordinal: number): string {
  return `${CLAIM_TEMPLATE_NAME}-${statefulSetName}-${ordinal}`
}

/** The ordinal of a claim named as the StatefulSet names them, or undefined for any other name. */
function claimOrdinal (statefulSetName: string, name: string): number | undefined {
  const prefix = `${CLAIM_TEMPLATE_NAME}-${statefulSetName}-`
  if (!name.startsWith(prefix)) return undefined
  const suffix = name.slice(prefix.length)
  return /^(0|[1-9]\d{0,8})$/.test(suffix) ? Number(suffix) : undefined
}

/** The claim's `spec.resources.requests.storage`, or what it holds instead of a quantity, in words. */
function observedRequest (claim: ObservedClaim): { text: string, quantity: Quantity } | { unreadable: string } {
  const value: unknown = claim.spec?.resources?.requests?.storage
  const quantity = typeof value === 'string' ? parseQuantity(value) : undefined
  return typeof value === 'string' && quantity !== undefined ? { text: value, quantity } : { unreadable: inWords(value) }
}

function inWords (value: unknown): string {
  if (value === undefined) return 'nothing'
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  if (typeof value !== 'object' || value === null) return String(value)
  return Array.isArray(value) ? 'an array' : 'an object'
}

function isBound (claim: ObservedClaim): boolean {
  return claim.status?.phase === 'Bound'
}

function observedStorageClassName (claim: ObservedClaim): string | undefined {
  const value: unknown = claim.spec?.storageClassName
  return typeof value === 'string' ? value : undefined
}

export function planVolumes (
  statefulSetName: string,
  db: { replicas: number, size: DesiredSize, storageClassName: string | undefined },
  observedClaims: ReadonlyMap<string, ObservedClaim>
): VolumePlan {
  const observedByOrdinal = new Map<number, ObservedClaim>()
  for (const [name, claim] of observedClaims) {
    const ordinal = claimOrdinal(statefulSetName, name)
    if (ordinal !== undefined) observedByOrdinal.set(ordinal, claim)
  }
  const ordinals = new Set([...Array.from({ length: db.replicas }, (_, ordinal) => ordinal), ...observedByOrdinal.keys()])

  const claims: ClaimPlan[] = []
  const refusedShrinks: KeptSize[] = []
  const pendingResizes: KeptSize[] = []
  const unreadableSizes: KeptSize[] = []
  let largest: DesiredSize | undefined
  for (const ordinal of [...ordinals].sort((a, b) => a - b)) {
    const name = claimName(statefulSetName, ordinal)
    const observed = observedByOrdinal.get(ordinal)
    let size = db.size
    let storageClassName = db.storageClassName
    if (observed !== undefined) {
      storageClassName = observedStorageClassName(observed)
      const request = observedRequest(observed)
      if ('unreadable' in request) {
        unreadableSizes.push({ name, requested: request.unreadable })
      } else {
        const comparison = compareQuantities(request.quantity, db.size.quantity)
        // A tie keeps the observed string: the claim stays byte for byte as it is.
        if (comparison >= 0 || !isBound(observed)) size = request
        if (comparison > 0) refusedShrinks.push({ name, requested: request.text })
        if (comparison < 0 && !isBound(observed)) pendingResizes.push({ name, requested: request.text })
      }
    }
    if (largest === undefined || compareQuantities(size.quantity, largest.quantity) > 0) largest = size
    claims.push({ name, storage: size.text, storageClassName })
  }
  return { dbSize: db.size.text, claims, refusedShrinks, pendingResizes, unreadableSizes, volumeSize: (largest ?? db.size).text }
}
