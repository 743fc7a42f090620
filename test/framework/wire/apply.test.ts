import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { KubernetesObject } from '../../../hooks/framework/wire/schemas.js'
import { applyUpdate, goJson, LAST_APPLIED_ANNOTATION as LAST_APPLIED, mergeKeyOf } from '../../../hooks/framework/wire/apply.js'

type Json = Record<string, any>

test('goJson writes what Go\'s encoding/json writes', () => {
  const value = JSON.parse('{"b":"x<y>&z \\u2028\\u2029 \\b\\f\\n\\r\\t\\u0001\\u001f\\u007f \\"q\\" \\\\ é 🐘","a":[1,-2,9007199254740991,{"𝒜":1,"ｚ":2,"z":3}],"n":null,"t":true,"f":1.5}')
  // What json.Marshal (Go 1.26) printed for the same text, decoded into a map[string]interface{}.
  const go = '{"a":[1,-2,9007199254740991,{"z":3,"ｚ":2,"𝒜":1}],"b":"x\\u003cy\\u003e\\u0026z \\u2028\\u2029 \\b\\f\\n\\r\\t\\u0001\\u001f\u007f \\"q\\" \\\\ é 🐘","f":1.5,"n":null,"t":true}'
  assert.equal(goJson(value), go)
})

test('goJson writes keys in Go\'s byte order, integer-like ones too, which JavaScript objects keep first', () => {
  const value = JSON.parse('{"a":1,"9":{"10":true,"9":false,"-x":null},"10":[{"2":0,"10":0}],".y":"",  "0":0}')
  // What json.Marshal printed for the same text, decoded into a map[string]interface{}.
  assert.equal(goJson(value), '{".y":"","0":0,"10":[{"10":0,"2":0}],"9":{"-x":null,"10":true,"9":false},"a":1}')
})

test('list items are matched by Go\'s %v of their merge key, as apply.go formats it', () => {
  const keys = JSON.parse('[80, 1000000, 123456, 1234567, 1e20, 1e21, 0.0001, 0.00001, 123456.5, 1.5, -0, 9007199254740993, true, null, {"b":[1,"x"],"a":1}, [1,"x"], "80"]')
  // What fmt.Printf("%v\n") (Go 1.26) printed for each value of the same text, decoded into an []interface{}.
  const go = ['80', '1e+06', '123456', '1.234567e+06', '1e+20', '1e+21', '0.0001', '1e-05', '123456.5', '1.5', '-0', '9.007199254740992e+15', 'true', '<nil>', 'map[a:1 b:[1 x]]', '[1 x]', '80']
  assert.deepEqual(keys.map((key: unknown) => mergeKeyOf({ port: key }, 'port')), go)
})

test('a merge key nested as deep as a body may nest is formatted, not a stack overflow', () => {
  const depth = 100_000
  const key = JSON.parse(`${'[{"a":'.repeat(depth)}1${'}]'.repeat(depth)}`) as unknown
  assert.equal(mergeKeyOf({ name: key }, 'name'), `${'[map[a:'.repeat(depth)}1${']]'.repeat(depth)}`)
})

/** An observed object that Metacontroller created from `applied`, after the API server and others added `extra`. */
function observed (applied: Json, extra: Json): KubernetesObject {
  return { ...structuredClone(applied), ...extra, metadata: { ...applied.metadata, ...extra.metadata, annotations: { ...extra.metadata?.annotations, [LAST_APPLIED]: goJson(applied) } } } as KubernetesObject
}

const applied = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default', labels: { app: 'a' } },
  spec: { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 80 }] }], nodeSelector: { disk: 'ssd' } }
}

test('the three-way merge keeps what others set, drops what the last answer had and this one has not, and matches list items by key', () => {
  const current = observed(applied, {
    metadata: { uid: 'u', resourceVersion: '7', labels: { app: 'a', added: 'by-someone' } },
    spec: { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 80, protocol: 'TCP' }], terminationMessagePath: '/dev/termination-log' }, { name: 'sidecar', image: 'mesh' }], nodeSelector: { disk: 'ssd' }, restartPolicy: 'Always' },
    status: { phase: 'Running' }
  })
  assert.deepEqual(applyUpdate(current, applied as KubernetesObject), current, 'the same answer again changes nothing')

  const desired = structuredClone(applied) as Json
  desired.spec.containers[0].image = 'app:2'
  delete desired.spec.nodeSelector
  desired.status = { phase: 'Failed' }
  desired.metadata.uid = 'other'
  const merged = applyUpdate(current, desired as KubernetesObject) as Json
  assert.equal(merged.spec.containers[0].image, 'app:2')
  assert.equal(merged.spec.containers[0].terminationMessagePath, '/dev/termination-log')
  assert.deepEqual(merged.spec.containers[0].ports, [{ containerPort: 80, protocol: 'TCP' }])
  assert.deepEqual(merged.spec.containers.map((c: Json) => c.name), ['app', 'sidecar'])
  assert.equal(merged.spec.nodeSelector, undefined)
  assert.equal(merged.spec.restartPolicy, 'Always')
  assert.deepEqual(merged.metadata.labels, { app: 'a', added: 'by-someone' })
  // System fields and the status stay as observed; the annotation records this answer.
  assert.equal(merged.metadata.uid, 'u')
  assert.deepEqual(merged.status, { phase: 'Running' })
  assert.equal(merged.metadata.annotations[LAST_APPLIED], goJson(desired))
})

test('a list without a merge key is replaced; a key named like a property of every object is a field like any other; a last-applied annotation that is not JSON fails the sync', () => {
  const current = observed({ ...applied, spec: { args: ['a', 'b'] } }, {})
  assert.deepEqual((applyUpdate(current, { ...applied, spec: { args: ['c'] } } as KubernetesObject) as Json).spec.args, ['c'])
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' } }
  const twoKeys = observed({ ...configMap, data: { constructor: 'a', toString: 'b' } }, {})
  assert.deepEqual((applyUpdate(twoKeys, { ...configMap, data: { toString: 'b' } } as KubernetesObject) as Json).data, { toString: 'b' })
  const containers = observed({ ...applied, spec: { containers: [{ name: 'constructor', image: 'a' }] } }, {})
  assert.deepEqual((applyUpdate(containers, { ...applied, spec: { containers: [{ name: 'app', image: 'a' }] } } as KubernetesObject) as Json).spec.containers, [{ name: 'app', image: 'a' }])
  const broken = { ...current, metadata: { ...current.metadata, annotations: { [LAST_APPLIED]: '{' } } }
  assert.throws(() => applyUpdate(broken, applied as KubernetesObject), /annotation is not JSON .*Metacontroller's sync fails on it/)
})
