/**
 * Migrates a template database once per run, by the real CLI, so that each
 * test file can start from a copy of it in well under a second. The template
 * is named after this run (see runId), so concurrent runs on one server each
 * have their own; the global teardown drops it.
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMigrateCli, serverUrl, templateDb, urlForDatabase, withAdmin } from './db-server';

export default async function globalSetup(): Promise<void> {
  process.env.TEST_RUN_ID = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const url = serverUrl();
  if (url) {
    const template = templateDb();
    await withAdmin(url, (c) => c.query(`CREATE DATABASE "${template}"`));
    await migrateOrThrow(urlForDatabase(url, template));
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
  const path = join(tmpdir(), `orchestrator-test-template-${process.env.TEST_RUN_ID}.tar`);
  writeFileSync(path, Buffer.from(await dump.arrayBuffer()));
  await db.close();
  process.env.TEST_PGLITE_TEMPLATE = path;
}

async function migrateOrThrow(connectionString: string): Promise<void> {
  const r = await runMigrateCli(connectionString);
  if (r.status !== 0) throw new Error(`Migrating the test template failed:\n${r.stdout}\n${r.stderr}`);
}
