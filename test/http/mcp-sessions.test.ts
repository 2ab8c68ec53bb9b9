/**
 * The MCP session limits (src/mcp/sessions.ts), which the app leaves at their
 * defaults (1000 sessions, 30 minutes idle): here the real router is mounted
 * with small ones, on the real services and database, and driven over HTTP.
 */
import express from 'express';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { authenticate } from '../../src/http/authenticate';
import { mcpRouter, type McpRouter } from '../../src/mcp/conversation-mcp';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
const routers: McpRouter[] = [];

beforeAll(async () => {
  t = await createTestApp();
});

afterAll(async () => {
  await Promise.all(routers.map((r) => r.close()));
  await t?.close();
});

/** An app that is the MCP router alone (behind the bearer-token gate, as in the app), with these limits. */
function appWith(options: { maxSessions?: number; idleTimeoutMs?: number }): {
  app: express.Express;
  router: McpRouter;
} {
  const router = mcpRouter(t.services, options);
  routers.push(router);
  const app = express();
  app.use(authenticate(t.services.authenticator, (_req, _res, refuse) => refuse()));
  app.use(express.json());
  app.use(router);
  return { app, router };
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
};

function initialize(app: express.Express, conversationId: string): supertest.Test {
  return request(app)
    .post(`/conversations/${conversationId}/mcp`)
    .set('accept', 'application/json, text/event-stream')
    .send(INITIALIZE);
}

function uniqueId(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

it('refuses an initialize beyond maxSessions with 503 unavailable, and opens one again once a session ends', async () => {
  const { app, router } = appWith({ maxSessions: 1 });
  const id = uniqueId('mcp-cap');
  const first = await initialize(app, id);
  expect(first.status).toBe(200);
  const sessionId = first.headers['mcp-session-id'] as string;
  expect(sessionId).toBeTruthy();

  const second = await initialize(app, id);
  expect(second.status).toBe(503);
  expect(second.headers['content-type']).toContain('application/problem+json');
  expect(second.body).toEqual(expect.objectContaining({ code: 'unavailable' }));
  expect(router.sessionCount).toBe(1);

  const ended = await request(app)
    .delete(`/conversations/${id}/mcp`)
    .set('mcp-session-id', sessionId)
    .set('mcp-protocol-version', LATEST_PROTOCOL_VERSION);
  expect(ended.status).toBe(200);
  expect(router.sessionCount).toBe(0);
  expect((await initialize(app, id)).status).toBe(200);
});

it('closes a session left idle longer than idleTimeoutMs', async () => {
  const { app, router } = appWith({ idleTimeoutMs: 1 });
  const id = uniqueId('mcp-idle');
  const opened = await initialize(app, id);
  expect(opened.status).toBe(200);
  const sessionId = opened.headers['mcp-session-id'] as string;

  // The sweep runs every second at the shortest.
  await waitFor('the idle session to be closed', () => router.sessionCount === 0, 10_000);
  const after = await request(app)
    .post(`/conversations/${id}/mcp`)
    .set('accept', 'application/json, text/event-stream')
    .set('mcp-session-id', sessionId)
    .send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  expect(after.status).toBe(404);
});
