import { hashNumber } from '../encoding.js'
import type { Json, KindModel } from './model.js'

/** A Service with what the API server allocates: cluster IPs, and node ports kept across applies. */

export const service: KindModel = {
  hasGeneration: false,
  defaulted: (spec) => {
    const type = spec.type ?? 'ClusterIP'
    return {
      ...spec,
      ...(type === 'LoadBalancer' ? { allocateLoadBalancerNodePorts: spec.allocateLoadBalancerNodePorts ?? true } : {}),
      ...(type === 'ClusterIP' ? {} : { externalTrafficPolicy: spec.externalTrafficPolicy ?? 'Cluster' }),
      internalTrafficPolicy: spec.internalTrafficPolicy ?? 'Cluster',
      sessionAffinity: spec.sessionAffinity ?? 'None',
      type
    }
  },
  completed: (spec, { name, previous }) => {
    const clusterIP: string = spec.clusterIP ?? previous?.spec.clusterIP ?? `10.96.${hashNumber(`${name}/a`, 256)}.${1 + hashNumber(`${name}/b`, 254)}`
    const ports = spec.ports.map((port: Json) => {
      if (spec.type === 'ClusterIP') return port
      const kept = previous?.spec.ports?.find((old: Json) => old.port === port.port)?.nodePort
      return { ...port, nodePort: kept ?? 30000 + hashNumber(`${name}/${port.port}`, 2768) }
    })
    return { ...spec, clusterIP, clusterIPs: [clusterIP], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', ports }
  },
  status: () => ({ loadBalancer: {} }),
  deletion: { gracePeriodSeconds: 0, finalizers: ['foregroundDeletion'] },
  managedFields: () => []
}
