/**
 * The resources a Kubernetes API server serves of its own (`kubectl api-resources` of Kubernetes 1.36, without the
 * custom ones): kind, plural and short names. kubectl resolves a name it is given against all of them, so a custom
 * resource that takes one of these names, or a built-in's kind as its singular, hides the built-in or is hidden by it.
 */
const BUILT_IN: ReadonlyArray<readonly [kind: string, plural: string, shortNames?: readonly string[]]> = [
  ['Binding', 'bindings'],
  ['ComponentStatus', 'componentstatuses', ['cs']],
  ['ConfigMap', 'configmaps', ['cm']],
  ['Endpoints', 'endpoints', ['ep']],
  ['Event', 'events', ['ev']],
  ['LimitRange', 'limitranges', ['limits']],
  ['Namespace', 'namespaces', ['ns']],
  ['Node', 'nodes', ['no']],
  ['PersistentVolumeClaim', 'persistentvolumeclaims', ['pvc']],
  ['PersistentVolume', 'persistentvolumes', ['pv']],
  ['Pod', 'pods', ['po']],
  ['PodTemplate', 'podtemplates'],
  ['ReplicationController', 'replicationcontrollers', ['rc']],
  ['ResourceQuota', 'resourcequotas', ['quota']],
  ['Secret', 'secrets'],
  ['ServiceAccount', 'serviceaccounts', ['sa']],
  ['Service', 'services', ['svc']],
  ['MutatingAdmissionPolicy', 'mutatingadmissionpolicies'],
  ['MutatingAdmissionPolicyBinding', 'mutatingadmissionpolicybindings'],
  ['MutatingWebhookConfiguration', 'mutatingwebhookconfigurations'],
  ['ValidatingAdmissionPolicy', 'validatingadmissionpolicies'],
  ['ValidatingAdmissionPolicyBinding', 'validatingadmissionpolicybindings'],
  ['ValidatingWebhookConfiguration', 'validatingwebhookconfigurations'],
  ['CustomResourceDefinition', 'customresourcedefinitions', ['crd', 'crds']],
  ['APIService', 'apiservices'],
  ['ControllerRevision', 'controllerrevisions'],
  ['DaemonSet', 'daemonsets', ['ds']],
  ['Deployment', 'deployments', ['deploy']],
  ['ReplicaSet', 'replicasets', ['rs']],
  ['StatefulSet', 'statefulsets', ['sts']],
  ['SelfSubjectReview', 'selfsubjectreviews'],
  ['TokenReview', 'tokenreviews'],
  ['LocalSubjectAccessReview', 'localsubjectaccessreviews'],
  ['SelfSubjectAccessReview', 'selfsubjectaccessreviews'],
  ['SelfSubjectRulesReview', 'selfsubjectrulesreviews'],
  ['SubjectAccessReview', 'subjectaccessreviews'],
  ['HorizontalPodAutoscaler', 'horizontalpodautoscalers', ['hpa']],
  ['CronJob', 'cronjobs', ['cj']],
  ['Job', 'jobs'],
  ['CertificateSigningRequest', 'certificatesigningrequests', ['csr']],
  ['Lease', 'leases'],
  ['EndpointSlice', 'endpointslices'],
  ['FlowSchema', 'flowschemas'],
  ['PriorityLevelConfiguration', 'prioritylevelconfigurations'],
  ['IngressClass', 'ingressclasses'],
  ['Ingress', 'ingresses', ['ing']],
  ['IPAddress', 'ipaddresses', ['ip']],
  ['NetworkPolicy', 'networkpolicies', ['netpol']],
  ['ServiceCIDR', 'servicecidrs'],
  ['RuntimeClass', 'runtimeclasses'],
  ['PodDisruptionBudget', 'poddisruptionbudgets', ['pdb']],
  ['ClusterRoleBinding', 'clusterrolebindings'],
  ['ClusterRole', 'clusterroles'],
  ['RoleBinding', 'rolebindings'],
  ['Role', 'roles'],
  ['DeviceClass', 'deviceclasses'],
  ['ResourceClaim', 'resourceclaims'],
  ['ResourceClaimTemplate', 'resourceclaimtemplates'],
  ['ResourceSlice', 'resourceslices'],
  ['PriorityClass', 'priorityclasses', ['pc']],
  ['CSIDriver', 'csidrivers'],
  ['CSINode', 'csinodes'],
  ['CSIStorageCapacity', 'csistoragecapacities'],
  ['StorageClass', 'storageclasses', ['sc']],
  ['VolumeAttachment', 'volumeattachments'],
  ['VolumeAttributesClass', 'volumeattributesclasses', ['vac']]
]

/** Each name kubectl takes for a built-in resource (its plural, its singular, the lowercase kind, and its short names), with what it is of which. */
const OWNERS = new Map(BUILT_IN.flatMap(([kind, plural, shortNames = []]): Array<[string, string]> => [
  [plural, `the plural of ${kind}`],
  [kind.toLowerCase(), `the singular of ${kind}`],
  ...shortNames.map((name): [string, string] => [name, `the short name of ${kind}`])
]))

/** What the built-in resource that kubectl knows by `name` calls it (`the short name of ReplicationController`), if one does. */
export function builtInOwner (name: string): string | undefined {
  return OWNERS.get(name)
}
