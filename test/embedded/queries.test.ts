/**
 * Queries on the embedded database (PGlite, what `npm start` uses without
 * DATABASE_URL), through the real entry point whatever TEST_DATABASE_URL says:
 * the query migration applies there (its data index without btree_gin-like
 * extras), filters, sorts and cursors answer as on a server, a bad filter is
 * a 400 with Postgres' message, and a like_regex back reference, which
 * PGlite could not cancel (it runs on the service's own thread, where
 * statement_timeout never fires), is refused before it runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer } from '../support/auth';
import { type SpawnedServer, startServer } from '../support/spawn-server';

let server: SpawnedServer | undefined;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'embedded-queries-'));
  server = await startServer({ DATA_DIR: dataDir, LOG_LEVEL: 'warn', QUERY_TIMEOUT_MS: '500' });
}, 120_000);

afterAll(async () => {
  if (server) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

interface Page {
  resources: Array<{ name: string }>;
  nextCursor: string | null;
}
interface Problem {
  code: string;
  detail: string;
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: Page & Problem }> {
  const res = await fetch(`${server!.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...bearer() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : {}) as Page & Problem };
}

const c = 'embedded-queries';
const list = (query: Record<string, string>) =>
  call('GET', `/conversations/${c}/resources?${new URLSearchParams(query).toString()}`);

it('filters, sorts and pages on PGlite; bad filters are 400s; a back reference is refused, not run', async () => {
  for (let i = 0; i < 9; i++) {
    const data = { status: i % 3 === 0 ? 'open' : 'closed', n: i, s: 'a'.repeat(401) };
    expect((await call('PUT', `/conversations/${c}/resources/r-${i}`, { data })).status).toBe(201);
  }
  const open = await list({ filter: '$.status == "open"', sort: '-name' });
  expect(open.status).toBe(200);
  expect(open.json.resources.map((r) => r.name)).toEqual(['r-6', 'r-3', 'r-0']);

  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await list({ sort: '-updatedAt', limit: '4', ...(cursor ? { cursor } : {}) });
    expect(page.status).toBe(200);
    seen.push(...page.json.resources.map((r) => r.name));
    cursor = page.json.nextCursor;
  } while (cursor !== null);
  expect([...seen].sort()).toEqual(Array.from({ length: 9 }, (_, i) => `r-${i}`));
  expect(new Set(seen).size).toBe(9);

  const bad = await list({ filter: '$.status ==' });
  expect(bad.status).toBe(400);
  expect(bad.json.code).toBe('validation_failed');
  expect(bad.json.detail).toMatch(/syntax error/);

  const started = Date.now();
  const backReference = await list({ filter: String.raw`$.s like_regex "^(.*)(.*)(.*)(.*)\\4\\3\\2\\1$"` });
  expect(backReference.status).toBe(400);
  expect(backReference.json.code).toBe('query_too_expensive');
  expect(Date.now() - started).toBeLessThan(10_000);
  // An escaped backslash followed by a digit is no back reference: it runs.
  expect((await list({ filter: String.raw`$.s like_regex "\\\\1"` })).status).toBe(200);
  expect((await call('GET', '/healthz')).status).toBe(200);
}, 60_000);
