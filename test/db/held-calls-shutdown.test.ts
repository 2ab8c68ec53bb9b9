/**
 * Held calls at shutdown, through the real entry point: a call held with
 * `Prefer: wait=60` answers its current state (403 permission_required, with
 * Preference-Applied) as soon as the process gets SIGTERM, and the process
 * still stops cleanly (exit 0) well within its grace period. Before that, a
 * call held longer than HTTP_REQUEST_TIMEOUT_MS is not cut off by it (that
 * timeout covers receiving the request, not the wait for its answer).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer } from '../support/auth';
import { createEmptyDatabase, serverUrl, type UrlTestDatabase } from '../support/db-server';
import { waitFor } from '../support/poll';
import { type SpawnedServer, startServer } from '../support/spawn-server';

const onServer = serverUrl() !== undefined;
// The entry point is given the database by URL: a Postgres server (TEST_DATABASE_URL); CI always has one.
const describeOnServer = onServer ? describe : describe.skip;

let db: UrlTestDatabase;
let server: SpawnedServer | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'held-shutdown-'));

const json = { 'content-type': 'application/json' };

describeOnServer('held calls at SIGTERM', () => {
  beforeAll(async () => {
    db = await createEmptyDatabase();
    server = await startServer({
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      SHUTDOWN_GRACE_MS: '20000',
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
    });
  }, 120_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await db?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a held call answers 403 permission_required at once, and the process exits 0', async () => {
    const base = server!.url;
    const id = 'held-at-shutdown';
    expect(
      (
        await fetch(`${base}/conversations`, {
          method: 'POST',
          headers: { ...bearer(), ...json },
          body: JSON.stringify({ id }),
        })
      ).status,
    ).toBe(201);
    const minted = await fetch(`${base}/conversations/${id}/agent-keys`, {
      method: 'POST',
      headers: { ...bearer(), ...json },
      body: JSON.stringify({ label: 'bot' }),
    });
    const { token } = (await minted.json()) as { token: string };
    const call = (wait: number, name: string): Promise<Response> =>
      fetch(`${base}/conversations/${id}/negotiate`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, ...json, Prefer: `wait=${wait}` },
        body: JSON.stringify({ action: 'data-tool/create-resource', args: { name, data: 1 } }),
      });
    // Held past HTTP_REQUEST_TIMEOUT_MS: answered when its wait is over, not cut off.
    const started = Date.now();
    const late = await call(3, 'late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    expect(late.status).toBe(403);
    expect(late.headers.get('preference-applied')).toBe('wait=3');
    await late.arrayBuffer();

    const held = call(60, 'held');
    // The request is recorded before the call is held (microseconds later, in the same process).
    await waitFor('the call held (its approval request recorded)', async () => {
      const res = await fetch(`${base}/conversations/${id}/approvals?status=pending`, { headers: bearer() });
      return ((await res.json()) as { approvals: unknown[] }).approvals.length === 2;
    });
    const signalled = Date.now();
    server!.child.kill('SIGTERM');
    const res = await held;
    expect(Date.now() - signalled).toBeLessThan(10_000);
    expect(res.status).toBe(403);
    expect(res.headers.get('preference-applied')).toBe('wait=60');
    expect(((await res.json()) as { code: string }).code).toBe('permission_required');
    expect(await server!.exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(15_000);
  }, 60_000);
});

if (!onServer) {
  it('needs a Postgres server reachable by URL (TEST_DATABASE_URL)', () => {
    expect(onServer).toBe(false);
  });
}
