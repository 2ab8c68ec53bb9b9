/**
 * Drops every database this run created (the template and any test file's
 * database a crashed or killed file left behind), and the embedded template
 * dump. Only names carrying this run's id are touched.
 */
import { rmSync } from 'node:fs';
import { DB_PREFIX, runId, serverUrl, withAdmin } from './db-server';

export default async function globalTeardown(): Promise<void> {
  const dump = process.env.TEST_PGLITE_TEMPLATE;
  if (dump) rmSync(dump, { force: true });
  const url = serverUrl();
  if (!url) return;
  const prefix = `${DB_PREFIX}${runId()}_`;
  await withAdmin(url, async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
      [prefix],
    );
    for (const { datname } of rows) await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  });
}
