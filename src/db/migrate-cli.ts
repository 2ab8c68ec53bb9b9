/**
 * `npm run db:migrate [-- --to NAME]`: applies pending migrations to the
 * database of DATABASE_URL, or to the embedded one under DATA_DIR when it is unset.
 * `npm run db:diff`: prints the SQL that would bring the migrations up to
 * schema.prisma (nothing when they agree); needs a server that allows
 * CREATE DATABASE for its temporary shadow database.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import { applyMigrations, diffMigrationsToSchema } from './migrator';
import { openDatabaseServer } from './embedded';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { to: { type: 'string' }, diff: { type: 'boolean', default: false } },
    strict: true,
  });
  const config = loadConfig(process.env);
  const server = await openDatabaseServer(config, (m) => process.stderr.write(`${m}\n`));
  try {
    if (values.diff) {
      const sql = await diffMigrationsToSchema({ connectionString: server.connectionString });
      process.stdout.write(sql.trim() === '' || /empty migration/i.test(sql) ? '' : sql);
      return;
    }
    const report = await applyMigrations({ connectionString: server.connectionString, to: values.to });
    if (report.applied.length === 0) {
      process.stdout.write('Database is up to date; no migration applied.\n');
    } else {
      for (const name of report.applied) process.stdout.write(`Applied ${name}\n`);
    }
  } finally {
    await server.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`db:migrate failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
