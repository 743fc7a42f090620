import assert from 'node:assert/strict'
import { test } from 'node:test'
import { defineStatement } from '../../hooks/database/sql.js'

test('a statement\'s named parameters are sent positionally, in the order it lists them', () => {
  const upsert = defineStatement('upsert', ['id', 'name', 'age'], ({ table }: { table: string }) =>
    `INSERT INTO "${table}" (id, name, age) VALUES ($id, $name, $age::integer) ON CONFLICT (id) DO UPDATE SET name = $name`)
  assert.equal(upsert.text({ table: 'students' }),
    'INSERT INTO "students" (id, name, age) VALUES ($1, $2, $3::integer) ON CONFLICT (id) DO UPDATE SET name = $2')
  assert.deepEqual(upsert.values({ age: 23, name: 'alex', id: 'default/alex' }), ['default/alex', 'alex', 23])
})

test('a statement that writes a parameter it does not list, or lists one it never writes, fails when its text is built', () => {
  const misspelled = defineStatement('misspelled', ['id'], () => 'SELECT $idd')
  assert.throws(() => misspelled.text(), /statement "misspelled" writes \$idd, which is not one of its parameters \(id\)/)
  const unused = defineStatement('unused', ['id', 'uid'], () => 'SELECT $id')
  assert.throws(() => unused.text(), /statement "unused" never writes its parameters uid/)
})

test('a cast after a parameter stays a cast', () => {
  const cast = defineStatement('cast', ['oid'], () => 'SELECT $oid::oid')
  assert.equal(cast.text(), 'SELECT $1::oid')
})
