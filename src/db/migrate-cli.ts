/**
 * `npm run db:migrate [-- --to NAME]`: applies pending migrations to the
 * database of DATABASE_URL, or to the embedded one under DATA_DIR when it is
 * unset, and stops after migration directory NAME when given.
 *
 * `npm run db:diff [-- --check]`: prints the SQL that would bring a database
 * migrated with every migration up to prisma/schema.prisma; nothing when they
 * agree. With DATABASE_URL it uses a temporary shadow database on that server
 * (CREATE DATABASE rights needed); without, a temporary in-memory embedded
 * Postgres. `--check` exits 1 when there is a difference.
 */
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { parseIntoClientConfig } from 'pg-connection-string';
import { loadConfig } from '../config';
import { embeddedClientConfig, openDatabaseServer } from './embedded';
import { applyMigrations, diffDatabaseToSchema, diffMigrationsToSchema } from './migrator';

const log = (m: string): void => void process.stderr.write(`${m}\n`);

async function migrate(to: string | undefined): Promise<void> {
  const config = loadConfig(process.env);
  const server = await openDatabaseServer(config, log);
  await server.ready;
  try {
    const report = await applyMigrations({ client: server.clientConfig, to });
    if (report.applied.length === 0) process.stdout.write('Database is up to date; no migration applied.\n');
    for (const name of report.applied) process.stdout.write(`Applied ${name}\n`);
  } finally {
    await server.close();
  }
}

async function diffOnScratchEmbedded(): Promise<string> {
  const db = await PGlite.create();
  try {
    const client = embeddedClientConfig(db);
    await applyMigrations({ client });
    return await diffDatabaseToSchema({ client });
  } finally {
    await db.close();
  }
}

async function diff(check: boolean): Promise<void> {
  const config = loadConfig(process.env);
  const raw = config.databaseUrl
    ? await diffMigrationsToSchema({ client: parseIntoClientConfig(config.databaseUrl) })
    : await diffOnScratchEmbedded();
  // The engine says "-- This is an empty migration." when there is nothing to do.
  const sql = raw.replace(/^-- This is an empty migration\.\s*$/m, '').trim();
  if (sql !== '') process.stdout.write(`${sql}\n`);
  if (check && sql !== '') {
    log('prisma/schema.prisma and prisma/migrations disagree: add a migration with the SQL above.');
    process.exitCode = 1;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      to: { type: 'string' },
      diff: { type: 'boolean', default: false },
      check: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.diff) await diff(values.check);
  else await migrate(values.to);
}

main().catch((err: unknown) => {
  log(`db:migrate failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
