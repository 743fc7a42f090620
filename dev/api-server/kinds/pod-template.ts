/** The defaults the API server gives a pod spec, in a Pod or in a workload's pod template. */

type Json = Record<string, any>

/** Always for an untagged or `:latest` image, IfNotPresent for a tag or a digest. */
export function defaultPullPolicy (image: string): string {
  const lastPart = image.slice(image.lastIndexOf('/') + 1)
  if (lastPart.includes('@')) return 'IfNotPresent'
  const colon = lastPart.indexOf(':')
  return colon === -1 || lastPart.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent'
}

export function withContainerDefaults (container: Json): Json {
  return {
    ...container,
    imagePullPolicy: container.imagePullPolicy ?? defaultPullPolicy(String(container.image)),
    resources: container.resources ?? {},
    terminationMessagePath: container.terminationMessagePath ?? '/dev/termination-log',
    terminationMessagePolicy: container.terminationMessagePolicy ?? 'File'
  }
}

export function withPodSpecDefaults (spec: Json): Json {
  return {
    ...spec,
    containers: spec.containers.map(withContainerDefaults),
    restartPolicy: spec.restartPolicy ?? 'Always',
    terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ?? 30,
    dnsPolicy: spec.dnsPolicy ?? 'ClusterFirst',
    securityContext: spec.securityContext ?? {},
    schedulerName: spec.schedulerName ?? 'default-scheduler'
  }
}

export function withTemplateDefaults (template: Json): Json {
  return { ...template, spec: withPodSpecDefaults(template.spec) }
}
