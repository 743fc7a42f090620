import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { controllers } from '../../hooks/controllers.js'
import { customResource, englishPlural } from '../../hooks/framework/custom-resource.js'
import { customResourceDefinition, metacontrollerManifest } from '../../dev/manifests.js'

const definition = { group: 'example.com', version: 'v1alpha1', spec: Type.Object({}), status: {}, printerColumns: [] }

test('the default plural is the English one', () => {
  const plurals = {
    configcopy: 'configcopies',
    policy: 'policies',
    class: 'classes',
    box: 'boxes',
    quiz: 'quizes',
    batch: 'batches',
    mesh: 'meshes',
    gateway: 'gateways'
  }
  for (const [word, plural] of Object.entries(plurals)) assert.equal(englishPlural(word), plural, word)
  // The original operators' CRDs keep their names.
  const originals = { 'postgres-writer': 'postgreswriters', bookstore: 'bookstores', podset: 'podsets', 'pulsar-consumer': 'pulsarconsumers' }
  for (const [name, plural] of Object.entries(originals)) assert.equal(controllers.find((c) => c.name === name)?.resource.plural, plural, name)
})

test('plural, singular, short names and categories are set in the resource; the CRD and the Metacontroller controller name it alike', () => {
  const derived = customResource({ ...definition, kind: 'ConfigCopy' })
  assert.deepEqual([derived.plural, derived.singular, derived.listKind], ['configcopies', 'configcopy', 'ConfigCopyList'])
  const named = customResource({ ...definition, kind: 'Quiz', plural: 'quizzes', singular: 'quiz', shortNames: ['qz'], categories: ['school', 'all'] })
  const crd = customResourceDefinition(named) as any
  assert.equal(crd.metadata.name, 'quizzes.example.com')
  assert.deepEqual(crd.spec.names, { kind: 'Quiz', listKind: 'QuizList', plural: 'quizzes', singular: 'quiz', shortNames: ['qz'], categories: ['school', 'all'] })
  const controller = metacontrollerManifest({ type: 'composite', name: 'quiz', resource: named, needs: [], childResources: [], hooks: { sync: () => ({ status: {}, children: [] }) } }) as any
  assert.deepEqual(controller.spec.parentResource, { apiVersion: 'example.com/v1alpha1', resource: 'quizzes' })
  for (const c of controllers) {
    const { spec } = metacontrollerManifest(c) as any
    const parent = c.type === 'composite' ? spec.parentResource : spec.resources[0]
    assert.equal(parent.resource, (customResourceDefinition(c.resource) as any).spec.names.plural, c.name)
  }
})

test('a name the API server would refuse fails when the resource is defined, saying which and why', () => {
  assert.throws(() => customResource({ ...definition, kind: 'configCopy' }), /^Error: kind "configCopy" cannot name a resource: use PascalCase/)
  assert.throws(() => customResource({ ...definition, kind: 'Quiz', plural: 'Quizzes' }), /^Error: Quiz: plural "Quizzes" is not a lowercase DNS label/)
  assert.throws(() => customResource({ ...definition, kind: 'Quiz', shortNames: ['q_z'] }), /^Error: Quiz: short name "q_z" is not a lowercase DNS label/)
  assert.throws(() => customResource({ ...definition, kind: 'Quiz', categories: [''] }), /^Error: Quiz: category "" is not a lowercase DNS label/)
})

test('a name kubectl already knows for a built-in resource fails when the resource is defined, naming its owner', () => {
  assert.throws(() => customResource({ ...definition, kind: 'RedisCache', shortNames: ['rc'] }),
    /^Error: RedisCache: short name "rc" is the short name of ReplicationController, a built-in Kubernetes resource, and kubectl would take one for the other: choose another$/)
  assert.throws(() => customResource({ ...definition, kind: 'Quiz', singular: 'quota' }), /^Error: Quiz: singular "quota" is the short name of ResourceQuota, a built-in/)
  assert.throws(() => customResource({ ...definition, kind: 'Cache', plural: 'pods' }), /^Error: Cache: plural "pods" is the plural of Pod, a built-in/)
  assert.throws(() => customResource({ ...definition, kind: 'Deployment', singular: 'webdeployment' }), /^Error: Deployment: kind "Deployment" is, in lowercase, the singular of Deployment, a built-in/)
  assert.doesNotThrow(() => customResource({ ...definition, kind: 'RedisCache', shortNames: ['rcache'], categories: ['all'] }))
})

test('two printer columns of one name fail when the resource is defined: a column of its own named Age beside the time since creation', () => {
  assert.throws(() => customResource({ ...definition, kind: 'ConfigCopy', printerColumns: [{ name: 'Age', type: 'integer', jsonPath: '.spec.age' }] }),
    /^Error: ConfigCopy: two printer columns are named "Age", and kubectl get would show both under one header \(Age is the time since creation, added to every resource\): name one otherwise$/)
  assert.throws(() => customResource({ ...definition, kind: 'ConfigCopy', printerColumns: [{ name: 'Key', type: 'string', jsonPath: '.spec.key' }, { name: 'Key', type: 'string', jsonPath: '.spec.value' }] }), /two printer columns are named "Key"/)
})
