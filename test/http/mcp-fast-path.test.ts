/**
 * The MCP endpoint's fast path (src/mcp/mcp-fast-path.ts): a tools/call of a
 * listed tool (2026-07-28, or 2025-11-25 without an envelope) is answered
 * without the SDK's per-request server, and must be answered exactly as the
 * SDK's serving answers it.
 * Each call is sent twice over a real port: as a client sends it (the fast
 * path takes it) and with one more `_meta` key, which the SDK ignores and the
 * fast path does not take (the SDK's way); the two answers must agree. The
 * fast path also makes no access check of its own (negotiate's decides):
 * strangers still find nothing, and a user's first call creates the
 * conversation as the SDK's way does.
 */
import type { Server } from 'node:http';
import { SERVER_INFO_META_KEY } from '@modelcontextprotocol/server';
import { uniqueId } from '../support/ids';
import { createConversation, listen, mintAgentKey, mintKey, type MintedKey, stopListening } from '../support/identity';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'fast-path-test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
/** A `_meta` key the SDK lets through unread and the fast path does not take: the same call, the SDK's way. */
const SDK_WAY = { 'dev.test/sdk-way': true };

let t: TestApp;
let server: Server | undefined;
let base: string;
let alice: MintedKey;
let bob: MintedKey;
let id: string;

beforeAll(async () => {
  t = await createTestApp();
  ({ server, base } = await listen(t.app));
  alice = await mintKey(base, 'user', 'alice');
  bob = await mintKey(base, 'user', 'bob');
  id = uniqueId('mcp-fast');
  await createConversation(base, alice.token, id);
  const negotiate = (body: object) =>
    request(base, alice.token).post(`/conversations/${id}/negotiate`).send(body).expect(200);
  await negotiate({ action: 'upgrade:data-tool:level-2' });
  await negotiate({ action: 'create-resource', args: { name: 'doc', data: { n: 1, items: [1, 2] } } });
});

afterAll(async () => {
  if (t) await closeMcpSessions(t.services);
  await stopListening(server);
  await t?.close();
});

interface Answer {
  status: number;
  contentType: string | null;
  /** Set on the fast path's answers (one write); the SDK's streams its body (chunked). */
  contentLength: string | null;
  body: unknown;
}

type Era = 'modern' | 'legacy';

async function call(
  conversationId: string,
  token: string,
  params: { name: string; arguments?: unknown; _meta?: Record<string, unknown> },
  rpcId: string | number = 7,
  sdkWay = false,
  era: Era = 'modern',
): Promise<Answer> {
  const meta = { ...(era === 'modern' ? META : {}), ...params._meta, ...(sdkWay ? SDK_WAY : {}) };
  const body = {
    jsonrpc: '2.0',
    id: rpcId,
    method: 'tools/call',
    params: { ...params, ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}) },
  };
  const res = await fetch(`${base}/conversations/${conversationId}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      // As each era's clients send them: a 2025 client names its revision only.
      ...(era === 'modern'
        ? { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': params.name }
        : { 'mcp-protocol-version': LEGACY }),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  // A JSON body, or (2025) an SSE stream of one message event.
  const sse = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (sse) expect(text).toMatch(/^event: message\ndata: .*\n\n$/);
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    contentLength: res.headers.get('content-length'),
    body: JSON.parse(sse ? text.slice(text.indexOf('data: ') + 6) : text) as unknown,
  };
}

/** The same call both ways: the fast path's answer, after checking that it took the call and agrees with the SDK. */
async function bothWays(
  conversationId: string,
  token: string,
  params: { name: string; arguments?: unknown; _meta?: Record<string, unknown> },
  rpcId?: string | number,
  era: Era = 'modern',
): Promise<Answer> {
  const fast = await call(conversationId, token, params, rpcId, false, era);
  const sdk = await call(conversationId, token, params, rpcId, true, era);
  expect(fast.contentLength).not.toBeNull();
  expect(sdk.contentLength).toBeNull();
  expect({ ...fast, contentLength: undefined }).toEqual({ ...sdk, contentLength: undefined });
  return fast;
}

describe('the fast path answers as the SDK does', () => {
  it('a successful call: structured content, the same JSON as text, resultType and the server identity', async () => {
    const answer = await bothWays(id, alice.token, { name: 'data-tool_read-resource', arguments: { name: 'doc' } });
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('application/json');
    const { result } = answer.body as { result: Record<string, unknown> };
    expect(result).toEqual(
      expect.objectContaining({
        resultType: 'complete',
        structuredContent: expect.objectContaining({ name: 'doc', data: { n: 1, items: [1, 2] } }) as unknown,
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'tool-orchestrator', version: '0.1.0' } },
      }),
    );
    expect(result.isError).toBeUndefined();
  });

  it('a string JSON-RPC id comes back as sent', async () => {
    const answer = await bothWays(id, alice.token, { name: 'calculator_add', arguments: { a: 2, b: 3 } }, 'call-1');
    expect(answer.body).toEqual(expect.objectContaining({ id: 'call-1', jsonrpc: '2.0' }));
  });

  it('tool errors: a missing resource, args that fail the schema, an unknown approval id', async () => {
    for (const params of [
      { name: 'data-tool_read-resource', arguments: { name: 'nothing-here' } },
      { name: 'data-tool_read-resource', arguments: { name: 5 } },
      { name: 'data-tool_read-resource', arguments: { name: 'doc' }, _meta: { approvalId: 'apr_unknown' } },
    ]) {
      const answer = await bothWays(id, alice.token, params);
      expect(answer.status).toBe(200);
      expect((answer.body as { result: { isError?: boolean } }).result.isError).toBe(true);
    }
  });

  it('a call without arguments', async () => {
    const answer = await bothWays(id, alice.token, { name: 'data-tool_list-resources' });
    expect((answer.body as { result: { isError?: boolean } }).result.isError).toBeUndefined();
  });
});

describe('2025-11-25 (the stateless legacy serving): the fast path answers as the SDK does', () => {
  it('results and tool errors, as one message event on an SSE stream, without the 2026 stamps', async () => {
    for (const params of [
      { name: 'data-tool_read-resource', arguments: { name: 'doc' } },
      { name: 'data-tool_read-resource', arguments: { name: 'nothing-here' } },
      { name: 'data-tool_read-resource', arguments: { name: 5 } },
      { name: 'data-tool_read-resource', arguments: { name: 'doc' }, _meta: { approvalId: 'apr_unknown' } },
      { name: 'data-tool_list-resources' },
    ]) {
      const answer = await bothWays(id, alice.token, params, 'legacy-1', 'legacy');
      expect(answer.status).toBe(200);
      expect(answer.contentType).toBe('text/event-stream');
      const { result } = answer.body as { result: Record<string, unknown> };
      expect(result.content).toEqual(expect.any(Array));
      expect(result.resultType).toBeUndefined();
      // A refusal's _meta is negotiate's result (tool-results.ts); the server's identity is a 2026 stamp only.
      expect(result._meta === undefined || !(SERVER_INFO_META_KEY in (result._meta as object))).toBe(true);
    }
  });

  it('another user finds nothing (404 problem+json both ways)', async () => {
    for (const sdkWay of [false, true]) {
      const answer = await call(
        id,
        bob.token,
        { name: 'calculator_add', arguments: { a: 1, b: 2 } },
        1,
        sdkWay,
        'legacy',
      );
      expect(answer.status).toBe(404);
      expect(answer.body).toEqual(expect.objectContaining({ code: 'not_found' }));
    }
  });
});

describe('access, decided by negotiate on the fast path', () => {
  it('another user, and an agent of another conversation, find nothing (404 problem+json both ways)', async () => {
    const other = uniqueId('mcp-fast-other');
    await createConversation(base, bob.token, other);
    const agentOfOther = await mintAgentKey(base, bob.token, other);
    for (const token of [bob.token, agentOfOther.token]) {
      const fast = await call(id, token, { name: 'data-tool_read-resource', arguments: { name: 'doc' } });
      const sdk = await call(id, token, { name: 'data-tool_read-resource', arguments: { name: 'doc' } }, 7, true);
      for (const answer of [fast, sdk]) {
        expect(answer.status).toBe(404);
        expect(answer.contentType).toMatch(/^application\/problem\+json/);
        expect(answer.body).toEqual(
          expect.objectContaining({ code: 'not_found', detail: `Conversation not found: ${id}` }),
        );
      }
    }
  });

  it("a user's first call creates the conversation, owned by that user", async () => {
    const fresh = uniqueId('mcp-fast-new');
    const answer = await call(fresh, alice.token, { name: 'calculator_add', arguments: { a: 1, b: 1 } });
    expect(answer.status).toBe(200);
    expect(answer.contentLength).not.toBeNull();
    await request(base, alice.token).get(`/conversations/${fresh}`).expect(200);
    await request(base, bob.token).get(`/conversations/${fresh}`).expect(404);
  });
});

it("an envelope the SDK refuses gets the SDK's answer, every time", async () => {
  const params = {
    name: 'data-tool_read-resource',
    arguments: { name: 'doc' },
    _meta: { 'io.modelcontextprotocol/clientCapabilities': 'none' },
  };
  for (let i = 0; i < 2; i++) {
    const answer = await call(id, alice.token, params);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(
      expect.objectContaining({ error: expect.objectContaining({ code: -32602 }) as unknown }),
    );
  }
});
