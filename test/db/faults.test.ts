/**
 * Database faults against the real process: a private Postgres cluster that
 * the test kills, restarts and stops, and src/server.ts spawned on it.
 * While the database drops connections under write load the process must
 * stay up and answer 2xx or 503 only; it must start while the database is
 * down and become ready when it comes up; a port in use must stop it.
 */
import { createServer, type Server } from 'node:net';
import { bearer } from '../support/auth';
import { runMigrateCli, withAdmin } from '../support/db-server';
import { createPgCluster, type PgCluster } from '../support/pg-cluster';
import { statusOf, waitFor } from '../support/poll';
import { freePort, spawnServer, type SpawnedServer } from '../support/spawn-server';

const WORKERS = 8;

const alive = (s: SpawnedServer): boolean => s.child.exitCode === null && s.child.signalCode === null;

const isProblem = (res: Response): boolean =>
  res.headers.get('content-type')?.startsWith('application/problem+json') ?? false;

/** Write load over both database paths: `pg` (resources, negotiate) and Prisma (permissions, conversations). */
function startLoad(url: string): { statuses: Map<string, number>; ok(): number; stop(): Promise<void> } {
  const statuses = new Map<string, number>();
  let ok = 0;
  let running = true;
  const json = (method: string, body: unknown): RequestInit => ({
    method,
    headers: { 'content-type': 'application/json', ...bearer() },
    body: JSON.stringify(body),
  });
  const requests = (conv: string, i: number): [string, RequestInit][] => [
    [`/conversations/${conv}/resources/note`, json('PUT', { data: { i } })],
    [`/conversations/${conv}/permissions/data-tool`, json('PUT', { level: 2 })],
    [
      `/conversations/${conv}/negotiate`,
      json('POST', { action: 'data-tool/update-resource', args: { name: 'note', data: { i } } }),
    ],
    [`/conversations/${conv}`, { method: 'GET', headers: bearer() }],
  ];
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; running; i++) {
      const [path, init] = requests(`load-${w}`, i)[i % 4]!;
      let key: string;
      try {
        const res = await fetch(url + path, init);
        const body = (await res.json()) as { code?: string };
        key = `${init.method} ${path.split('/')[3] ?? 'conversation'} ${res.status}`;
        // A 503 must be the problem+json `unavailable`, not some other failure.
        if (res.status === 503 && !(isProblem(res) && body.code === 'unavailable')) key += ' (not unavailable)';
        if (res.status < 300) ok++;
      } catch {
        key = 'no answer';
      }
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
  };
  const all = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  return {
    statuses,
    ok: () => ok,
    stop: async () => {
      running = false;
      await all;
    },
  };
}

/** How often each database error (by code, or message when it has none) was logged as lost or unavailable. */
function errorKinds(log: string): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const line of log.split('\n')) {
    if (!line.includes('"level":40') || !line.includes('"err"')) continue;
    const { msg, err } = JSON.parse(line) as { msg: string; err: { code?: string; message: string } };
    const key = `${msg}: ${err.code ?? err.message}`;
    kinds[key] = (kinds[key] ?? 0) + 1;
  }
  return kinds;
}

async function terminateBackends(cluster: PgCluster): Promise<number> {
  return withAdmin(cluster.url, async (c) => {
    const r = await c.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tool-orchestrator'`,
    );
    return r.rowCount ?? 0;
  });
}

describe('database faults', () => {
  let cluster: PgCluster;
  const servers: SpawnedServer[] = [];

  beforeAll(async () => {
    cluster = await createPgCluster();
    await cluster.start();
    const migrated = await runMigrateCli(cluster.url);
    if (migrated.status !== 0) throw new Error(`migration failed: ${migrated.stderr}`);
  }, 60_000);

  afterAll(async () => {
    for (const s of servers) if (alive(s)) s.child.kill('SIGKILL');
    await cluster?.destroy();
  }, 30_000);

  it('survives terminated backends and an immediate restart under write load', async () => {
    const server = await spawnServer({ DATABASE_URL: cluster.url, DB_POOL_SIZE: '8' });
    servers.push(server);
    await waitFor('ready', async () => (await statusOf(`${server.url}/readyz`)) === 200);
    for (let w = 0; w < WORKERS; w++) {
      const res = await fetch(`${server.url}/conversations/load-${w}/permissions/data-tool`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...bearer() },
        body: JSON.stringify({ level: 2 }),
      });
      expect(res.status).toBe(200);
    }

    const load = startLoad(server.url);
    let terminated = 0;
    for (let round = 0; round < 5; round++) {
      const before = load.ok();
      await waitFor('load succeeding between faults', () => load.ok() > before + 20 || !alive(server));
      terminated += await terminateBackends(cluster);
    }
    const beforeRestart = load.ok();
    await waitFor('load succeeding before the restart', () => load.ok() > beforeRestart + 20 || !alive(server));
    await cluster.restartImmediate();
    const afterRestart = load.ok();
    await waitFor('load succeeding after the restart', () => load.ok() > afterRestart + 20 || !alive(server));
    await load.stop();

    const counted = Object.fromEntries([...load.statuses].sort());
    console.log(`terminated ${terminated} backends; statuses during the faults: ${JSON.stringify(counted)}`);
    expect(alive(server)).toBe(true);
    console.log(`errors behind the 503s: ${JSON.stringify(errorKinds(server.output()))}`);
    const errors = server
      .output()
      .split('\n')
      .filter((l) => l.includes('"level":50') && l.includes('"err"'));
    if (errors.length) console.log(`errors logged:\n${errors.slice(0, 5).join('\n')}`);
    for (const key of load.statuses.keys()) expect(key).toMatch(/ (200|201|503)$/);
    expect(terminated).toBeGreaterThan(0);

    // Served again, without a restart of the service.
    for (let i = 0; i < 10; i++)
      expect(await statusOf(`${server.url}/conversations/load-${i % WORKERS}`, bearer())).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 40_000);

  it('starts while the database is down, retries, and becomes ready when it is up', async () => {
    await cluster.stop();
    const server = await spawnServer({ DATABASE_URL: cluster.url });
    servers.push(server);
    await waitFor('/healthz 200', async () => (await statusOf(`${server.url}/healthz`)) === 200);
    await waitFor('two retries logged', () => (server.output().match(/retrying in/g) ?? []).length >= 2);
    expect(await statusOf(`${server.url}/readyz`)).toBe(503);
    const early = await fetch(`${server.url}/conversations/early`, { headers: bearer() });
    expect(early.status).toBe(503);
    expect(early.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await early.json()) as { code: string }).code).toBe('unavailable');
    expect(alive(server)).toBe(true);
    await cluster.start();
    await waitFor('/readyz 200', async () => (await statusOf(`${server.url}/readyz`)) === 200, 20_000);
    console.log(`start-up log:\n${server.output()}`);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 40_000);

  it('stops cleanly on SIGTERM while it is still retrying', async () => {
    await cluster.stop();
    const server = await spawnServer({ DATABASE_URL: cluster.url });
    servers.push(server);
    await waitFor('a retry logged', () => /retrying in/.test(server.output()));
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain('Stopped');
  }, 20_000);

  it('exits non-zero naming the port when the port is in use', async () => {
    const port = await freePort();
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    try {
      const server = await spawnServer({ DATABASE_URL: cluster.url }, port);
      servers.push(server);
      const code = await server.exited;
      expect(code).not.toBe(0);
      expect(server.output()).toContain(`port ${port}`);
      expect(server.output()).not.toContain('Listening');
    } finally {
      await new Promise((r) => holder.close(r));
    }
  }, 20_000);
});
