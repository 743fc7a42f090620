import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', '.cache/**', '.data/**'] }),
  {
    rules: {
      // `void promise` marks a promise that is deliberately not awaited, as in a signal handler.
      'no-void': ['error', { allowAsStatement: true }],
      // A Promise's resolve function may say what it resolves (resolvePort), for example where `resolve` from
      // node:path is in scope.
      'promise/param-names': ['error', { resolvePattern: '^_?resolve' }]
    }
  }
]
