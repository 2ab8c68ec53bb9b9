/**
 * The bound on open notification streams of one replica (src/mcp/stream-limits.ts),
 * which the app leaves at its default (1000): here the real router is mounted
 * with a small one, on the real services and database, and driven over HTTP.
 * Stateless serving keeps nothing else per client (no sessions, no idle sweep).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { TEST_ADMIN_TOKEN } from '../support/auth';
import { authenticate } from '../../src/http/authenticate';
import { mcpRouter, type McpRouter } from '../../src/mcp/conversation-mcp';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
let router: McpRouter;
let server: Server;
let base: string;

beforeAll(async () => {
  t = await createTestApp();
  router = mcpRouter(t.services, { maxStreams: 1 });
  const app = express();
  app.use(authenticate(t.services.authenticator, (_req, _res, refuse) => refuse()));
  app.use(express.json());
  app.use(router);
  server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await router?.close();
  await new Promise<void>((resolve) => {
    server?.close(() => resolve());
    server?.closeAllConnections();
  });
  await t?.close();
});

function openStream(conversationId: string, signal: AbortSignal): Promise<Response> {
  return fetch(`${base}/conversations/${conversationId}/mcp`, {
    headers: { accept: 'text/event-stream', authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    signal,
  });
}

it('refuses a stream beyond maxStreams with 503 unavailable, and opens one again once a stream ends', async () => {
  const id = uniqueId('mcp-streams');
  const first = new AbortController();
  const opened = await openStream(id, first.signal);
  expect(opened.status).toBe(200);
  expect(opened.headers.get('content-type')).toBe('text/event-stream');
  expect(router.streamCount).toBe(1);

  const refused = await openStream(id, new AbortController().signal);
  expect(refused.status).toBe(503);
  expect(refused.headers.get('content-type')).toContain('application/problem+json');
  expect(await refused.json()).toEqual(expect.objectContaining({ code: 'unavailable' }));

  // Ordinary requests do not count: they hold nothing once answered.
  const list = await fetch(`${base}/conversations/${id}/mcp`, {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  expect(list.status).toBe(200);
  await list.text();

  first.abort();
  await waitFor('the closed stream to be released', () => router.streamCount === 0);
  const again = new AbortController();
  expect((await openStream(id, again.signal)).status).toBe(200);
  again.abort();
});
