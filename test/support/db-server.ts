/**
 * Test databases. With TEST_DATABASE_URL (or DATABASE_URL) every test file
 * gets its own database on that server, cloned from a migrated template.
 * Without either, every test file gets its own embedded Postgres (PGlite),
 * loaded from a migrated data directory that the global setup made once.
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClientConfig } from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import { withAdmin } from './admin-client';
import { embeddedClientConfig } from '../../src/db/embedded';

export const ROOT = join(__dirname, '..', '..');

/**
 * This run's id, set once by the global setup and inherited by the workers.
 * Every database a run creates carries it in its name, so two `npm test` runs
 * on one server never touch each other's databases, and the teardown can drop
 * exactly what this run made (including what a crashed test file left).
 */
export function runId(): string {
  const id = process.env.TEST_RUN_ID;
  if (!id) throw new Error('TEST_RUN_ID is not set: the global setup did not run');
  return id;
}

export const DB_PREFIX = 'orchestrator_test_';

export function templateDb(): string {
  return `${DB_PREFIX}${runId()}_template`;
}

export function serverUrl(): string | undefined {
  const url = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  return url && url.trim() !== '' ? url : undefined;
}

/** A URL on the same server as `url`, for database `name`. */
export function urlForDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export { withAdmin };

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `npm run db:migrate` as a user would (the CLI, in a child process).
 * Asynchronous on purpose: an embedded server in this process must keep
 * answering while the child talks to it.
 */
export function runMigrateCli(connectionString: string, args: string[] = []): Promise<CliResult> {
  const tsxCli = require.resolve('tsx/cli');
  const child = spawn(process.execPath, [tsxCli, join(ROOT, 'src', 'db', 'migrate-cli.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: connectionString, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

export interface TestDatabase {
  /** How the app's pool reaches it (in-process streams for the embedded one). */
  client: ClientConfig;
  /** An embedded PGlite database (one session shared by all connections). */
  embedded: boolean;
  close(): Promise<void>;
}

/** A database that another process (the migration CLI) can reach by URL. */
export interface UrlTestDatabase extends TestDatabase {
  url: string;
}

/**
 * A fresh, empty (unmigrated) database, reachable by URL for the migration
 * CLI: on the embedded path through a PGlite socket server, which only the
 * CLI's sequential statements use (the service never serves PGlite that way).
 */
export async function createEmptyDatabase(): Promise<UrlTestDatabase> {
  const url = serverUrl();
  if (url) return createOnServer(url, undefined);
  const db = await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
  await server.start();
  return {
    url: `postgresql://postgres:postgres@${server.getServerConn()}/postgres?sslmode=disable`,
    client: embeddedClientConfig(db),
    embedded: true,
    close: async () => {
      await server.stop();
      await db.close();
    },
  };
}

/** A fresh database with every migration applied. */
export async function createMigratedDatabase(): Promise<TestDatabase> {
  const url = serverUrl();
  if (url) return createOnServer(url, templateDb());
  const templatePath = process.env.TEST_PGLITE_TEMPLATE;
  if (!templatePath) throw new Error('global setup did not prepare the embedded template');
  const db = await PGlite.create({ loadDataDir: new Blob([readFileSync(templatePath)]) });
  return { client: embeddedClientConfig(db), embedded: true, close: () => db.close() };
}

async function createOnServer(url: string, template: string | undefined): Promise<UrlTestDatabase> {
  const name = `${DB_PREFIX}${runId()}_${randomBytes(4).toString('hex')}`;
  await withAdmin(url, (c) => c.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`));
  const own = urlForDatabase(url, name);
  return {
    url: own,
    client: parseIntoClientConfig(own),
    embedded: false,
    close: () => withAdmin(url, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
