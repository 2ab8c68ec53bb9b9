/**
 * src/db/unit-of-work.ts's SingleStatement (a singleWrite action's one
 * autocommitted statement) when the action is abandoned (tool timeout):
 * a statement still waiting for a connection is never sent; one running
 * (waiting on a row lock) is cancelled, and its connection is closed rather
 * than handed to another request (a cancel must not reach someone else's
 * statement).
 */
import { Client } from 'pg';
import { type Database, openDatabase } from '../../src/db/database';
import { SingleStatement } from '../../src/db/unit-of-work';
import { type TestDatabase, createMigratedDatabase, serverUrl } from '../support/db-server';

let database: TestDatabase;
let db: Database;

beforeAll(async () => {
  database = await createMigratedDatabase();
  db = openDatabase({ client: database.client, poolSize: 1, sharedSession: database.embedded });
  await db.pool.query("INSERT INTO conversations (id, owner) VALUES ('single', 'u')");
  await db.pool.query(
    "INSERT INTO resources (conversation_id, name, data, created_by, updated_by) VALUES ('single', 'doc', '1', 'u', 'u')",
  );
});

afterAll(async () => {
  await db?.close();
  await database?.close();
});

const UPDATE = {
  name: 'single_update_test',
  text: "UPDATE resources SET data = '2', version = version + 1 WHERE conversation_id = 'single' AND name = 'doc' RETURNING version",
  values: [],
};

async function version(): Promise<number> {
  const { rows } = await db.pool.query<{ version: number }>(
    "SELECT version FROM resources WHERE conversation_id = 'single' AND name = 'doc'",
  );
  return rows[0]!.version;
}

it('never sends a statement abandoned while it waited for a connection', async () => {
  const held = await db.pool.connect(); // the pool's only connection
  const unit = new SingleStatement(db.pool);
  const sending = unit.query(UPDATE);
  sending.catch(() => undefined);
  const abandoning = unit.abandon();
  held.release();
  await abandoning;
  await expect(sending).rejects.toThrow(/not sent/);
  expect(unit.begun()).toBeUndefined();
  expect(await version()).toBe(1);
});

// A server only: the embedded database serves one session at a time, so no other can hold the lock.
(serverUrl() ? it : it.skip)(
  'cancels a statement abandoned while it waited on a row lock, and closes its connection',
  async () => {
    const locker = new Client(database.client);
    // Watches from outside any transaction (inside one, pg_stat_activity is a snapshot taken once).
    const watcher = new Client(database.client);
    await Promise.all([locker.connect(), watcher.connect()]);
    try {
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM resources WHERE conversation_id = 'single' AND name = 'doc' FOR UPDATE");
      const unit = new SingleStatement(db.pool);
      const sending = unit.query(UPDATE);
      sending.catch(() => undefined);
      // The statement is running (waiting on the lock) once its backend shows it.
      for (;;) {
        const { rows } = await watcher.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'UPDATE resources SET data = ''2''%' AND wait_event_type = 'Lock'",
        );
        if (rows[0]!.n > 0) break;
        await new Promise((r) => setImmediate(r));
      }
      await unit.abandon();
      await expect(sending).rejects.toMatchObject({ code: '57014' }); // query_canceled
      // Its connection was closed, not returned to the pool for another request.
      expect(db.pool.totalCount).toBe(0);
      await locker.query('COMMIT');
      expect(await version()).toBe(1);
    } finally {
      await Promise.all([locker.end(), watcher.end()]);
    }
  },
);
