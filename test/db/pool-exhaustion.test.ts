/**
 * When no connection can be had in time (every one busy, or the server not
 * answering), pg-pool fails with an error that has no code. It must still be
 * judged "database unavailable" (503), on the SQL path and through Prisma.
 */
import { PGlite } from '@electric-sql/pglite';
import type { PoolClient } from 'pg';
import { type Database, isDatabaseUnavailable, openDatabase } from '../../src/db/database';
import { embeddedClientConfig } from '../../src/db/embedded';

describe('a pool with no free connection', () => {
  let pglite: PGlite;
  let db: Database;
  let held: PoolClient;
  beforeAll(async () => {
    pglite = await PGlite.create();
    db = openDatabase({
      client: embeddedClientConfig(pglite),
      poolSize: 1,
      connectionTimeoutMs: 100,
      sharedSession: true,
    });
    held = await db.pool.connect();
  });
  afterAll(async () => {
    await db.close();
    await pglite.close();
  });

  it('fails pool.query with an error judged unavailable', async () => {
    const err: unknown = await db.pool.query('SELECT 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('fails a Prisma query with an error judged unavailable', async () => {
    const err: unknown = await db.prisma.$queryRaw`SELECT 1`.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('serves again once the connection is free', async () => {
    held.release();
    expect((await db.pool.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n).toBe(1);
  });
});
