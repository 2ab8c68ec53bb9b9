/**
 * Where the database is: the server of DATABASE_URL, or an embedded Postgres
 * (PGlite, data under DATA_DIR) reached through in-process connections (see
 * pglite-bridge.ts), so that `pg`, Prisma's adapter and the migration engine
 * all talk to it as to any server while no other process can reach it.
 */
import { PGlite } from '@electric-sql/pglite';
import { join } from 'node:path';
import type { ClientConfig } from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import type { Config } from '../config';
import { lockDataDir } from './data-dir-lock';
import { pgliteBridge } from './pglite-bridge';

export interface DatabaseServer {
  /** How a `pg` client reaches it: a URL's fields, or in-process streams for the embedded one. */
  clientConfig: ClientConfig;
  embedded: boolean;
  /**
   * Resolves when the embedded database is open (at once for a server). Opening
   * a new data directory takes seconds, so the service listens meanwhile;
   * a rejection (a damaged data directory) is not a reason to retry.
   */
  ready: Promise<void>;
  /** Closes the embedded database and frees DATA_DIR (a no-op for an external server). */
  close(): Promise<void>;
}

export function externalServer(url: string): DatabaseServer {
  return {
    clientConfig: parseIntoClientConfig(url),
    embedded: false,
    ready: Promise.resolve(),
    close: async () => undefined,
  };
}

/** In-process `pg` connections to a PGlite instance (the service's, or a test's in-memory one). */
export function embeddedClientConfig(db: PGlite | Promise<PGlite>, onError?: (err: Error) => void): ClientConfig {
  const bridge = pgliteBridge(db, onError);
  return { user: 'postgres', database: 'postgres', stream: () => bridge.connect() };
}

export async function openDatabaseServer(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
  log: (message: string) => void,
): Promise<DatabaseServer> {
  if (config.databaseUrl) return externalServer(config.databaseUrl);
  // Before PGlite touches the files: a second process must not open them at all.
  const lock = await lockDataDir(config.dataDir, { log });
  const dataDir = join(config.dataDir, 'pgdata');
  const opening = PGlite.create({ dataDir });
  const ready = opening.then(
    () => log(`Using embedded Postgres (PGlite), data in ${dataDir}, reachable only from this process`),
    async (err: unknown) => {
      await lock.release();
      throw err;
    },
  );
  ready.catch(() => undefined); // the caller awaits `ready`; this only keeps an early failure from being unhandled
  let closed = false;
  return {
    clientConfig: embeddedClientConfig(opening, (err) => log(`embedded Postgres: ${err.message}`)),
    embedded: true,
    ready,
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        const db = await opening.catch(() => undefined);
        await db?.close();
      } finally {
        await lock.release();
      }
    },
  };
}
