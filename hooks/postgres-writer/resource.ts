import { Type, type Static } from '@sinclair/typebox'
import { applyRules, customResource } from '../framework/index.js'
import { SQL_IDENTIFIER_PATTERN } from './sql-identifier.js'

export const TABLE_NAME_PATTERN = SQL_IDENTIFIER_PATTERN

/** The hook answers Ready=False/InvalidSpec for such a value (sync.ts); the API server refuses it at apply time. */
const TEXT_COLUMN = applyRules({ rule: "!self.contains('\\u0000')", message: 'must not contain a NUL character (\\u0000): a PostgreSQL text column cannot hold one' })

/** spec.deletionPolicy's values; the first is the default. */
export const DELETION_POLICIES = ['Delete', 'Orphan'] as const
export type DeletionPolicy = typeof DELETION_POLICIES[number]

export const PostgresWriterSpecSchema = Type.Object({
  table: Type.String({ pattern: TABLE_NAME_PATTERN, maxLength: 63, description: 'Table the row is written to: a lowercase SQL identifier, created if missing.' }),
  // A person's name, and a country's: the longest official name of a country has 56 characters.
  name: Type.String({ ...TEXT_COLUMN, maxLength: 256, description: 'Value of the row\'s name column: at most 256 characters.' }),
  age: Type.Integer({ minimum: 0, maximum: 2147483647, description: 'Value of the row\'s age column (a PostgreSQL integer).' }),
  country: Type.String({ ...TEXT_COLUMN, maxLength: 128, description: 'Value of the row\'s country column: at most 128 characters.' }),
  deletionPolicy: Type.Union(DELETION_POLICIES.map((policy) => Type.Literal(policy)), {
    default: DELETION_POLICIES[0],
    description: 'What happens to the row when this object goes: Delete (the default) deletes it; Orphan keeps it, and a new PostgresWriter of the same name and namespace takes it over.'
  })
})
export type PostgresWriterSpec = Static<typeof PostgresWriterSpecSchema>

export const postgresWriterResource = customResource({
  group: 'demo.yash.com',
  version: 'v1',
  kind: 'PostgresWriter',
  shortNames: ['pgw'],
  spec: PostgresWriterSpecSchema,
  status: {
    table: Type.Optional(Type.String({ description: 'Table that holds the row since the last successful sync.' })),
    id: Type.Optional(Type.String({ description: 'Primary key of the row: <namespace>/<name>.' })),
    lastDriftRepair: Type.Optional(Type.Object({
      time: Type.String({ description: 'When a sync repaired the row.' }),
      reason: Type.Union([Type.Literal('RowChanged'), Type.Literal('RowMissing')], { description: 'What the sync found: the row changed, or missing, since the hook wrote it.' }),
      message: Type.String({ description: 'The row, its table, and what the sync did.' })
    }, { description: 'The last time a sync found the row changed or deleted behind the hook\'s back since it wrote it, and wrote it again.' })),
    releaseToken: Type.Optional(Type.String({ description: 'Set when the row was deleted because this object stopped matching the selector of its DecoratorController: the first sync once it matches again carries it back, which tells it from a sync sent before, and writes the row again.' }))
  },
  printerColumns: [
    { name: 'Table', type: 'string', jsonPath: '.spec.table' },
    { name: 'Name', type: 'string', jsonPath: '.spec.name' },
    { name: 'Years', type: 'integer', jsonPath: '.spec.age' },
    { name: 'Country', type: 'string', jsonPath: '.spec.country' }
  ]
})

export type PostgresWriterStatus = Static<typeof postgresWriterResource.statusSchema>
