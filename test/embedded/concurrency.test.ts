/**
 * The embedded database (what `npm start` uses without DATABASE_URL) under
 * concurrent clients, on the real entry point, whatever TEST_DATABASE_URL
 * says: 16 clients, each in its own conversation, read, list, write with and
 * without If-Match and negotiate updates at once. No answer may carry another
 * conversation's data, no request may fail with a 5xx, and every
 * acknowledged write must be there afterwards.
 *
 * (Served through pglite-socket, this failed on a fresh start: 500/503s,
 * wrong 404/403s, other conversations' resources, lost writes.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer } from '../support/auth';
import { type SpawnedServer, startServer } from '../support/spawn-server';

const CLIENTS = 16;
/** EMBEDDED_SOAK_ROUNDS=60 makes this a longer soak (about 20 s of load per client on this machine). */
const ROUNDS = /^\d+$/.test(process.env.EMBEDDED_SOAK_ROUNDS ?? '') ? Number(process.env.EMBEDDED_SOAK_ROUNDS) : 5;
const NAMES = ['alpha', 'beta', 'gamma'];

interface Stats {
  requests: number;
  serverErrors: string[];
  foreign: string[];
  unexpected: string[];
}

interface Data {
  conv: string;
  name: string;
  n: number;
}

function isData(v: unknown): v is Data {
  return typeof v === 'object' && v !== null && 'conv' in v && 'name' in v && 'n' in v;
}

async function call(
  base: string,
  stats: Stats,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown; etag: string | null }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...bearer(), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  stats.requests++;
  const text = await res.text();
  if (res.status >= 500) stats.serverErrors.push(`${method} ${path} -> ${res.status} ${text.slice(0, 200)}`);
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined, etag: res.headers.get('etag') };
}

/** One client: its own conversation, its writes strictly in order, so it knows what each read must see. */
async function client(base: string, conv: string, stats: Stats): Promise<Map<string, number>> {
  const acked = new Map<string, number>();
  const expectOwn = (what: string, data: unknown, name?: string): void => {
    if (!isData(data) || data.conv !== conv || (name !== undefined && data.name !== name)) {
      stats.foreign.push(`${conv} ${what}: ${String(JSON.stringify(data)).slice(0, 200)}`);
    }
  };
  const expectStatus = (what: string, got: number, ...want: number[]): void => {
    if (!want.includes(got)) stats.unexpected.push(`${conv} ${what}: ${got}`);
  };

  const perm = await call(base, stats, 'PUT', `/conversations/${conv}/permissions/data-tool`, { level: 2 });
  expectStatus('permission', perm.status, 200);
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of NAMES) {
      const path = `/conversations/${conv}/resources/${name}`;
      n++;
      const put = await call(base, stats, 'PUT', path, { data: { conv, name, n } });
      expectStatus(`PUT ${name}`, put.status, 200, 201);
      if (put.status < 300) acked.set(name, n);

      const get = await call(base, stats, 'GET', path);
      expectStatus(`GET ${name}`, get.status, 200);
      expectOwn(`GET ${name}`, (get.json as { data?: unknown }).data, name);
      if (isData((get.json as { data?: unknown }).data) && (get.json as { data: Data }).data.n !== acked.get(name)) {
        stats.unexpected.push(
          `${conv} GET ${name}: stale n ${(get.json as { data: Data }).data.n} != ${acked.get(name)}`,
        );
      }

      n++;
      const cond = await call(base, stats, 'PUT', path, { data: { conv, name, n } }, { 'if-match': get.etag ?? '"0"' });
      expectStatus(`PUT If-Match ${name}`, cond.status, 200);
      if (cond.status === 200) acked.set(name, n);

      n++;
      const neg = await call(base, stats, 'POST', `/conversations/${conv}/negotiate`, {
        action: 'data-tool/update-resource',
        args: { name, data: { conv, name, n } },
      });
      expectStatus(`negotiate update ${name}`, neg.status, 200);
      if (neg.status === 200) {
        acked.set(name, n);
        expectOwn(`negotiate ${name}`, (neg.json as { output?: { data?: unknown } }).output?.data, name);
      }

      const read = await call(base, stats, 'POST', `/conversations/${conv}/negotiate`, {
        action: 'data-tool/read-resource',
        args: { name },
      });
      expectStatus(`negotiate read ${name}`, read.status, 200);
      expectOwn(`negotiate read ${name}`, (read.json as { output?: { data?: unknown } }).output?.data, name);
    }
    const list = await call(base, stats, 'GET', `/conversations/${conv}/resources`);
    expectStatus('list', list.status, 200);
    for (const r of (list.json as { resources?: Array<{ data: unknown }> }).resources ?? []) expectOwn('list', r.data);
  }
  return acked;
}

describe('embedded database under concurrent clients (fresh start)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-embedded-'));
  let server: SpawnedServer | undefined;
  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps conversations apart, answers no 5xx and loses no acknowledged write', async () => {
    server = await startServer({ DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    const base = server.url;
    const stats: Stats = { requests: 0, serverErrors: [], foreign: [], unexpected: [] };
    const convs = Array.from({ length: CLIENTS }, (_, i) => `emb-${i}`);
    const started = Date.now();
    const acked = await Promise.all(convs.map((conv) => client(base, conv, stats)));
    if (process.env.EMBEDDED_SOAK_ROUNDS) {
      process.stdout.write(`embedded soak: ${stats.requests} requests in ${Date.now() - started} ms\n`);
    }

    expect(stats.serverErrors).toEqual([]);
    expect(stats.foreign).toEqual([]);
    expect(stats.unexpected).toEqual([]);
    expect(stats.requests).toBe(CLIENTS * (1 + ROUNDS * (NAMES.length * 5 + 1)));

    // Every acknowledged write is what is stored, after a restart too.
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    server = await startServer({ DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    for (const [i, conv] of convs.entries()) {
      for (const [name, n] of acked[i]!) {
        const res = await fetch(`${server.url}/conversations/${conv}/resources/${name}`, { headers: bearer() });
        expect(res.status).toBe(200);
        expect(((await res.json()) as { data: Data }).data).toEqual({ conv, name, n });
      }
    }
  }, 180_000);
});
