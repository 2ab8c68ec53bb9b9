/**
 * Helpers for the identity tests (test/http/identity-*.test.ts): keys minted
 * over HTTP as a client would, conversations owned by a user, the app on a
 * real port for the MCP SDK client, and the shape of a 401.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type supertest from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TEST_ADMIN_TOKEN, anonymous, request } from './auth';

export interface MintedKey {
  id: string;
  token: string;
  role: 'admin' | 'user' | 'agent';
  subject: string;
}

/** What supertest talks to: an app (a server per request) or the base URL of one listening. */
export type Target = Express | string;

/** supertest with that token, or without any credentials. */
export function as(app: Target, token: string | undefined): supertest.Agent {
  return token === undefined ? anonymous.agent(app) : request(app, token);
}

/** `POST /keys` as the test admin. */
export async function mintKey(
  app: Target,
  role: 'admin' | 'user',
  subject: string,
  extra: Record<string, unknown> = {},
): Promise<MintedKey> {
  const res = await request(app, TEST_ADMIN_TOKEN)
    .post('/keys')
    .send({ role, subject, ...extra });
  if (res.status !== 201) throw new Error(`POST /keys: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as MintedKey;
}

/** `POST /conversations/{id}/agent-keys` as `token` (the owner's, or an admin's). */
export async function mintAgentKey(
  app: Target,
  token: string,
  conversationId: string,
  extra: Record<string, unknown> = {},
): Promise<MintedKey & { conversationId: string; maxLevel: number | null }> {
  const res = await request(app, token).post(`/conversations/${conversationId}/agent-keys`).send(extra);
  if (res.status !== 201) throw new Error(`POST agent-keys: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as MintedKey & { conversationId: string; maxLevel: number | null };
}

/** `POST /conversations` as `token`. */
export async function createConversation(app: Target, token: string, id: string): Promise<void> {
  const res = await request(app, token).post('/conversations').send({ id });
  if (res.status !== 201) throw new Error(`POST /conversations: ${res.status} ${JSON.stringify(res.body)}`);
}

/** A 401 as the contract has it: problem+json `unauthorized` and a Bearer challenge. */
export function expectUnauthorized(
  res: supertest.Response | { status: number; headers: Record<string, string> },
): void {
  expect(res.status).toBe(401);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer\b/);
  if ('body' in res) {
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toEqual(expect.objectContaining({ status: 401, code: 'unauthorized' }));
  }
}

/** A problem+json answer with this status and code. */
export function expectProblem(res: supertest.Response, status: number, code: string): void {
  expect({ status: res.status, code: (res.body as { code?: unknown }).code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
}

/** The app on a port of its own (the MCP SDK client speaks real HTTP). */
export async function listen(app: Express): Promise<{ server: Server; base: string }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function stopListening(server: Server | undefined): Promise<void> {
  if (!server) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export interface McpConnection {
  client: Client;
  transport: StreamableHTTPClientTransport;
  close(): Promise<void>;
}

/** The official SDK client, initialized against /conversations/{id}/mcp with `Authorization: Bearer token`. */
export async function mcpConnect(base: string, conversationId: string, token: string): Promise<McpConnection> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/conversations/${conversationId}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'identity-test-client', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    close: async () => {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

/** An MCP initialize request body, for raw requests. */
export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

export const MCP_ACCEPT = 'application/json, text/event-stream';
