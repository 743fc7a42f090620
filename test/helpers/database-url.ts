/** The tests' PostgreSQL: DATABASE_URL, which scripts/run-tests.ts sets. */
export function testDatabaseUrl (): string {
  const url = process.env.DATABASE_URL
  if (url === undefined || url === '') throw new Error('DATABASE_URL is not set: run the tests with `npm test`, which starts a PostgreSQL')
  return url
}
