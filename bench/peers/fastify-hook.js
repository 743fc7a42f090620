import Fastify from 'fastify'
import pg from 'pg'
import { sayReady } from './listen.js'
import { podSetAnswer } from './podset-answer.js'

/**
 * A peer: the minimal fastify hook server a person would write. Fastify's defaults (its JSON parser, no schemas,
 * no logger) and the body limit raised for large parents. `POST /podset/sync` answers as hooks/podset does; with
 * DATABASE_URL, `POST /postgres-writer/sync` and `/finalize` are the naive PostgresWriter: `INSERT … ON CONFLICT` on
 * every sync and `DELETE` on every finalize, in schema PG_SCHEMA, creating the table on first use.
 */

const fastify = Fastify({ bodyLimit: 64 * 1024 * 1024 })
fastify.get('/healthz', async () => ({ status: 'ok' }))
fastify.post('/podset/sync', async (request) => podSetAnswer(request.body))

const pool = process.env.DATABASE_URL === undefined ? undefined : new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.PG_POOL_MAX ?? 10) })
if (pool !== undefined) {
  const schema = process.env.PG_SCHEMA ?? 'public'
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`)
  const upsert = async (table, values) => await pool.query(
    `INSERT INTO "${schema}"."${table}" (id, name, age, country) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country`, values)

  const createTable = async (table) => {
    try {
      await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}"."${table}" (id text PRIMARY KEY, name text, age integer, country text)`)
    } catch (error) {
      // Two first syncs at once: the other one's CREATE made the table (or its type) between the check and the insert.
      if (error.code !== '23505' && error.code !== '42P07') throw error
    }
  }
  const objectOf = (request, reply) => {
    const { metadata, spec } = request.body.object
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(spec.table)) {
      reply.code(422).send({ message: 'bad table name' })
      return undefined
    }
    return { metadata, spec, id: `${metadata.namespace ?? 'default'}/${metadata.name}` }
  }
  const answer = ({ metadata, spec, id }, status, reason, message) => ({
    status: {
      table: spec.table,
      id,
      observedGeneration: metadata.generation,
      conditions: [{ type: 'Ready', status, reason, message, lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), observedGeneration: metadata.generation }]
    },
    attachments: []
  })

  fastify.post('/postgres-writer/sync', async (request, reply) => {
    const object = objectOf(request, reply)
    if (object === undefined) return reply
    const { spec, id } = object
    const values = [id, spec.name, spec.age, spec.country]
    try {
      await upsert(spec.table, values)
    } catch (error) {
      if (error.code !== '42P01') throw error
      await createTable(spec.table)
      await upsert(spec.table, values)
    }
    return answer(object, 'True', 'RowWritten', `row ${JSON.stringify(id)} written`)
  })

  fastify.post('/postgres-writer/finalize', async (request, reply) => {
    const object = objectOf(request, reply)
    if (object === undefined) return reply
    try {
      await pool.query(`DELETE FROM "${schema}"."${object.spec.table}" WHERE id = $1`, [object.id])
    } catch (error) {
      if (error.code !== '42P01') throw error
    }
    return { ...answer(object, 'False', 'RowDeleted', `row ${JSON.stringify(object.id)} deleted`), finalized: true }
  })
}

process.once('SIGTERM', async () => {
  await fastify.close()
  await pool?.end()
  process.exit(0)
})

await fastify.listen({ port: Number(process.env.PORT), host: process.env.HOST })
sayReady(fastify.server.address().port)
