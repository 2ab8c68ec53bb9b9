/**
 * Subscriptions across a `kill -9` (API.md, "Shared context, M6"): the
 * service runs as a real child process with the bundled pipeline (data-tool
 * writes `raw-orders` through negotiate, transform-tool's subscription
 * writes `transformed-orders`). The second handler run is held on a row lock
 * the test takes, the process is killed mid-delivery, and once started
 * again the lease lapses and the handler runs to the end: at least once,
 * nothing of the killed attempt committed.
 */
import { Client } from 'pg';
import { bearer } from '../support/auth';
import { type UrlTestDatabase, createEmptyDatabase, serverUrl } from '../support/db-server';
import { uniqueId } from '../support/ids';
import type { MintedKey } from '../support/identity';
import { waitFor } from '../support/poll';
import { scratchDir } from '../support/scratch-dir';
import { type SpawnedServer, startServer } from '../support/spawn-server';

async function json(url: string, method: string, token: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...bearer(token) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

// Two processes on one database: the embedded one is a single process's.
const onServer = serverUrl() ? describe : describe.skip;

onServer('the transform pipeline, and a kill -9 mid-delivery', () => {
  let db: UrlTestDatabase;
  let server: SpawnedServer | undefined;
  let locker: Client | undefined;
  const dir = scratchDir('subscriptions-kill');

  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await server?.exited;
    await locker?.end().catch(() => undefined);
    await db?.close();
    dir.remove();
  });

  it('transforms raw-* written through negotiate, and still does after a kill and a restart', async () => {
    db = await createEmptyDatabase();
    // A 3 s tool timeout: the lease of the attempt cut short by the kill lapses in 11 s.
    const env = { DATABASE_URL: db.url, DATA_DIR: dir.path, TOOL_TIMEOUT_MS: '3000', LOG_LEVEL: 'warn' };
    server = await startServer(env);
    const alice = (await json(`${server.url}/keys`, 'POST', bearer().Authorization.slice(7), {
      role: 'user',
      subject: uniqueId('alice'),
    })) as unknown as MintedKey;
    const conv = uniqueId('pipeline');
    // The restarted process listens on another port.
    const base = (): string => `${server!.url}/conversations/${conv}`;
    await json(`${server.url}/conversations`, 'POST', alice.token, { id: conv });
    for (const tool of ['data-tool', 'transform-tool']) {
      await json(`${base()}/permissions/${tool}`, 'PUT', alice.token, { level: 2 });
    }
    const negotiate = (action: string, args: Record<string, unknown>): Promise<Record<string, unknown>> =>
      json(`${base()}/negotiate`, 'POST', alice.token, { tool: 'data-tool', action, args });
    expect(await negotiate('create-resource', { name: 'raw-orders', data: { item: 'apple' } })).toEqual(
      expect.objectContaining({ success: true }),
    );
    const transformed = async (): Promise<Record<string, unknown> | undefined> => {
      const res = await fetch(`${base()}/resources/transformed-orders`, { headers: bearer(alice.token) });
      return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
    };
    await waitFor('the first transform', async () => (await transformed()) !== undefined, 30_000);
    expect(await transformed()).toEqual(
      expect.objectContaining({
        createdBy: 'transform-tool',
        data: { source: 'raw-orders', sourceVersion: 1, data: { item: 'APPLE' } },
      }),
    );

    // The target's row locked: the next run of the handler waits on it, mid-delivery.
    locker = new Client({ connectionString: db.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query(
      `SELECT 1 FROM resources WHERE conversation_id = $1 AND name = 'transformed-orders' FOR UPDATE`,
      [conv],
    );
    await negotiate('update-resource', { name: 'raw-orders', data: { item: 'pear' } });
    await waitFor('the handler waiting on the lock', async () => {
      const { rows } = await locker!.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM subscription_deliveries WHERE conversation_id = $1 AND type = 'resource.updated'
                   AND status = 'pending' AND attempts = 1)::int
              * (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')::int AS n`,
        [conv],
      );
      return rows[0]!.n > 0;
    });
    server.child.kill('SIGKILL');
    expect(await server.exited).toBeNull();
    await locker.query('ROLLBACK');

    server = await startServer(env);
    await waitFor(
      'the transform after the restart',
      async () => ((await transformed())?.data as { sourceVersion?: number } | undefined)?.sourceVersion === 2,
      60_000,
    );
    expect((await transformed())!.data).toEqual({ source: 'raw-orders', sourceVersion: 2, data: { item: 'PEAR' } });
    const { rows } = await locker.query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM subscription_deliveries WHERE conversation_id = $1 ORDER BY event_id`,
      [conv],
    );
    // The killed attempt committed nothing; a later one did.
    expect(rows).toEqual([
      { status: 'done', attempts: 1 },
      { status: 'done', attempts: expect.any(Number) as number },
    ]);
    expect(rows[1]!.attempts).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
