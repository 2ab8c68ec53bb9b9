/**
 * Migrates a template database once per run, by the real CLI, so that each
 * test file can start from a copy of it in well under a second.
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEMPLATE_DB, runMigrateCli, serverUrl, urlForDatabase, withAdmin } from './db-server';

export default async function globalSetup(): Promise<void> {
  const url = serverUrl();
  if (url) {
    await withAdmin(url, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS "${TEMPLATE_DB}" WITH (FORCE)`);
      await c.query(`CREATE DATABASE "${TEMPLATE_DB}"`);
    });
    await migrateOrThrow(urlForDatabase(url, TEMPLATE_DB));
    return;
  }
  const db = await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
  await server.start();
  try {
    await migrateOrThrow(`postgresql://postgres:postgres@${server.getServerConn()}/postgres?sslmode=disable`);
  } finally {
    await server.stop();
  }
  const dump = await db.dumpDataDir('none');
  const path = join(tmpdir(), `orchestrator-test-template-${process.pid}.tar`);
  writeFileSync(path, Buffer.from(await dump.arrayBuffer()));
  await db.close();
  process.env.TEST_PGLITE_TEMPLATE = path;
}

async function migrateOrThrow(connectionString: string): Promise<void> {
  const r = await runMigrateCli(connectionString);
  if (r.status !== 0) throw new Error(`Migrating the test template failed:\n${r.stdout}\n${r.stderr}`);
}
