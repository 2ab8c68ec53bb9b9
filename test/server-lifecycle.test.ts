/**
 * The real entry point as a newcomer runs it: on the embedded database
 * (DATABASE_URL unset) it migrates, serves, keeps data under DATA_DIR across
 * a restart, and on SIGTERM stops cleanly with exit code 0.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer } from './support/auth';
import { type SpawnedServer, spawnServer, startServer as start, waitReady } from './support/spawn-server';

describe('npm start on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-data-'));
  const servers: SpawnedServer[] = [];
  const startServer = async (dir: string): Promise<SpawnedServer> => {
    const server = await start({ DATA_DIR: dir });
    servers.push(server);
    return server;
  };
  afterAll(() => {
    // A failed expectation must not leave a server running on a removed directory.
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps data across a restart and stops cleanly on SIGTERM', async () => {
    // A new data directory takes seconds to initialise: the service listens
    // first, so /healthz answers while /readyz still says 503.
    const first = await spawnServer({ DATA_DIR: dataDir });
    servers.push(first);
    const deadline = Date.now() + 30_000;
    let health = await fetch(`${first.url}/healthz`).catch(() => undefined);
    while (!health?.ok && Date.now() < deadline && first.child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 50));
      health = await fetch(`${first.url}/healthz`).catch(() => undefined);
    }
    expect(health?.status).toBe(200);
    expect((await fetch(`${first.url}/readyz`)).status).toBe(503);
    await waitReady(first);
    expect(first.output()).toContain('Using embedded Postgres (PGlite)');
    const put = await fetch(`${first.url}/conversations/restart-check/resources/note`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer() },
      body: JSON.stringify({ data: { kept: true } }),
    });
    expect(put.status).toBe(201);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('Stopped');

    const second = await startServer(dataDir);
    expect(second.output()).toContain('Database schema is up to date');
    const get = await fetch(`${second.url}/conversations/restart-check/resources/note`, { headers: bearer() });
    expect(get.status).toBe(200);
    expect(await get.json()).toMatchObject({ name: 'note', data: { kept: true }, version: 1, createdBy: 'client' });
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 120_000);
});
