/**
 * src/http/express-server.ts: the entry file's server creates requests and
 * responses with express's prototypes already in place (express's own
 * setPrototypeOf on entry then changes nothing: docs/BENCHMARKS.md §8), and
 * they are still Node's IncomingMessage and ServerResponse, serving the app
 * as before.
 */
import { IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createExpressServer } from '../../src/http/express-server';
import { TEST_ADMIN_TOKEN } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
let server: Server;
let base: string;
const seen: Array<{ req: boolean; res: boolean; nodeTypes: boolean }> = [];

beforeAll(async () => {
  t = await createTestApp();
  server = createExpressServer(t.app, (req, res) => {
    // Before express has touched them.
    seen.push({
      req: Object.getPrototypeOf(req) === t.app.request,
      res: Object.getPrototypeOf(res) === t.app.response,
      nodeTypes: req instanceof IncomingMessage && res instanceof ServerResponse,
    });
    t.app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  await t?.close();
});

it('creates requests and responses with the app prototypes, and serves the app through them', async () => {
  const conv = uniqueId('proto');
  const headers = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' };
  const created = await fetch(`${base}/conversations/${conv}/negotiate`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ action: 'greet', args: { name: 'proto' } }),
  });
  expect(created.status).toBe(200);
  expect(created.headers.get('x-request-id')).toBeTruthy();
  expect(((await created.json()) as { success: boolean }).success).toBe(true);
  // express's request helpers (req.get, req.protocol) and response helpers (res.status().json()) work.
  const refused = await fetch(`${base}/conversations/${conv}/negotiate`, { method: 'POST', headers, body: '{' });
  expect(refused.status).toBe(400);
  expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect((await fetch(`${base}/healthz`)).status).toBe(200);

  expect(seen.length).toBe(3);
  for (const s of seen) expect(s).toEqual({ req: true, res: true, nodeTypes: true });
});

it('is what app.listen serves with', async () => {
  const listening = t.app.listen(0, '127.0.0.1');
  try {
    await new Promise<void>((resolve) => listening.once('listening', resolve));
    const port = (listening.address() as AddressInfo).port;
    const captured: boolean[] = [];
    const onRequest = (req: IncomingMessage): void => {
      captured.push(Object.getPrototypeOf(req) === t.app.request);
    };
    listening.prependListener('request', onRequest);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect(captured).toEqual([true]);
  } finally {
    await new Promise<void>((resolve) => listening.close(() => resolve()));
  }
});
