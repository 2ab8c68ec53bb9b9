/**
 * Resource TTL on the embedded database (PGlite, what `npm start` uses
 * without DATABASE_URL), through the real entry point, whatever
 * TEST_DATABASE_URL says: the migration applies there, a resource written
 * with a 1 s TTL reads as missing once it expired, and the entry file's own
 * sweeper timer deletes it, recording `resource.expired` in the audit log by
 * `expiry`. Polled with deadlines; RESOURCE_SWEEP_INTERVAL_MS keeps it short.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer } from '../support/auth';
import { waitFor } from '../support/poll';
import { type SpawnedServer, startServer } from '../support/spawn-server';

let dir: string;
let server: SpawnedServer | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttl-embedded-'));
  server = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn', RESOURCE_SWEEP_INTERVAL_MS: '200' });
}, 120_000);

afterAll(async () => {
  if (server) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

type Json = { [key: string]: unknown } & { expiresAt?: number; updatedAt: number; version: number; entries: Json[] };

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${server!.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...bearer() },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json };
}

it('a 1 s TTL: expiresAt, then missing, then swept by the timer with an audit entry by expiry', async () => {
  const put = await call('PUT', '/conversations/ttl-embedded/resources/note', { data: { n: 1 }, ttlSeconds: 1 });
  expect(put.status).toBe(201);
  expect(put.body.expiresAt).toBe(put.body.updatedAt + 1000);
  const kept = await call('PUT', '/conversations/ttl-embedded/resources/kept', { data: 2, ttlSeconds: 3600 });
  expect(kept.status).toBe(201);

  await waitFor(
    'the resource to read as missing',
    async () => (await call('GET', '/conversations/ttl-embedded/resources/note')).status === 404,
    10_000,
  );
  const expired = async (): Promise<Json[]> =>
    (await call('GET', '/conversations/ttl-embedded/audit')).body.entries.filter((e) => e.event === 'resource.expired');
  await waitFor('the sweeper to delete it', async () => (await expired()).length > 0, 10_000);
  expect(await expired()).toEqual([
    expect.objectContaining({ actor: 'expiry', action: 'note', outcome: 'success', conversationId: 'ttl-embedded' }),
  ]);
  expect((await call('GET', '/conversations/ttl-embedded/resources/kept')).status).toBe(200);
  // A create over the name is a new resource.
  const again = await call('PUT', '/conversations/ttl-embedded/resources/note', { data: { n: 2 } });
  expect(again.status).toBe(201);
  expect(again.body.version).toBe(1);
}, 60_000);
