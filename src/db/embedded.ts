/**
 * Where the database is: the server of DATABASE_URL, or an embedded Postgres
 * (PGlite, data under DATA_DIR) served over a local TCP socket so that `pg`,
 * Prisma's adapter and the migration engine all talk to it like to any server.
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config';

export interface DatabaseServer {
  connectionString: string;
  embedded: boolean;
  /** Closes the embedded server (a no-op for an external one). */
  close(): Promise<void>;
}

export async function openDatabaseServer(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
  log: (message: string) => void,
): Promise<DatabaseServer> {
  if (config.databaseUrl) {
    return { connectionString: config.databaseUrl, embedded: false, close: async () => undefined };
  }
  const dataDir = join(config.dataDir, 'pgdata');
  mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir });
  // PGlite runs one query at a time; the socket server queues the queries of
  // several client connections, and keeps each transaction on its connection.
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 64 });
  await server.start();
  const address = server.getServerConn(); // "127.0.0.1:PORT"
  log(`Using embedded Postgres (PGlite), data in ${dataDir}, served at ${address}`);
  let closed = false;
  return {
    connectionString: `postgresql://postgres:postgres@${address}/postgres?sslmode=disable`,
    embedded: true,
    close: async () => {
      if (closed) return;
      closed = true;
      await server.stop();
      await db.close();
    },
  };
}
