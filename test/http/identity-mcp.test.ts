/**
 * The MCP endpoint's credentials (API.md, "LLM and MCP interop" and
 * "Identity and access"), over a real port with the official SDK client: the
 * 401 challenge points at the RFC 9728 metadata, which anyone may read; a
 * foreign Origin is refused; the conversation's agent key, its owner and an
 * admin may initialize and list tools, another user finds nothing; with no
 * sessions every request is judged by its own credentials; one principal
 * holds at most MCP_MAX_STREAMS_PER_PRINCIPAL open notification streams, and
 * one owner's keys together (its agents' included) MCP_MAX_STREAMS_PER_OWNER.
 */
import type { Server } from 'node:http';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { TEST_ADMIN_TOKEN, anonymous } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  INITIALIZE,
  MCP_ACCEPT,
  type McpConnection,
  type MintedKey,
  createConversation,
  listen,
  mcpConnect,
  mintAgentKey,
  mintKey,
  stopListening,
} from '../support/identity';
import { type TestApp, createTestApp } from '../support/test-app';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';
import { waitFor } from '../support/poll';

let t: TestApp;
let server: Server | undefined;
let base: string;
let alice: MintedKey;
let bob: MintedKey;
let id: string;
let agent: MintedKey;
let open: McpConnection[] = [];

beforeAll(async () => {
  t = await createTestApp({ MCP_MAX_STREAMS_PER_PRINCIPAL: '2', MCP_MAX_STREAMS_PER_OWNER: '3' });
  ({ server, base } = await listen(t.app));
  alice = await mintKey(base, 'user', 'alice');
  bob = await mintKey(base, 'user', 'bob');
  id = uniqueId('mcp-auth');
  await createConversation(base, alice.token, id);
  agent = await mintAgentKey(base, alice.token, id);
});

afterEach(async () => {
  for (const c of open) await c.close();
  open = [];
});

afterAll(async () => {
  if (t) await closeMcpSessions(t.services);
  await stopListening(server);
  await t?.close();
});

const mcpPath = (conversationId: string): string => `/conversations/${conversationId}/mcp`;

async function connect(conversationId: string, token: string): Promise<McpConnection> {
  const c = await mcpConnect(base, conversationId, token);
  open.push(c);
  return c;
}

/** A raw Streamable HTTP POST (what the SDK client would never send, or to read the status it would hide). */
function post(conversationId: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}${mcpPath(conversationId)}`, {
    method: 'POST',
    headers: { accept: MCP_ACCEPT, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const auth = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

describe('without a token', () => {
  it('initialize → 401 whose challenge names the resource metadata', async () => {
    const res = await post(id, INITIALIZE);
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer\b/);
    const metadataUrl = `${base}/.well-known/oauth-protected-resource/conversations/${id}/mcp`;
    expect(challenge).toContain(`resource_metadata="${metadataUrl}"`);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toEqual(expect.objectContaining({ status: 401, code: 'unauthorized' }));

    // A bad token gets the same pointer.
    const bad = await post(id, INITIALIZE, auth('nope'));
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl}"`);
  });

  it('the metadata document is public: resource, bearer in the header, no authorization server without JWTs', async () => {
    const res = await anonymous(base).get(`/.well-known/oauth-protected-resource/conversations/${id}/mcp`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.resource).toBe(`${base}${mcpPath(id)}`);
    expect(res.body.resource).toMatch(new RegExp(`/conversations/${id}/mcp$`));
    expect(res.body.bearer_methods_supported).toEqual(['header']);
    expect(res.body).not.toHaveProperty('authorization_servers');
  });

  it('the SDK client cannot connect', async () => {
    await expect(mcpConnect(base, id, 'not-a-token')).rejects.toThrow();
  });
});

describe('who may use a conversation’s MCP server', () => {
  it.each([
    ['its agent key', () => agent.token],
    ['its owner', () => alice.token],
    ['an admin', () => TEST_ADMIN_TOKEN],
  ])('%s initializes and lists tools with the SDK client', async (_who, token) => {
    const { client, transport } = await connect(id, token());
    expect(transport.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toEqual(expect.arrayContaining(['example-tool_greet', 'data-tool_read-resource']));
    const greet = await client.callTool({ name: 'example-tool_greet', arguments: { name: 'mcp' } });
    expect(greet.isError).toBeFalsy();
  });

  it('another user → 404 not_found, and the SDK client cannot connect', async () => {
    const res = await post(id, INITIALIZE, auth(bob.token));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual(expect.objectContaining({ code: 'not_found' }));
    await expect(mcpConnect(base, id, bob.token)).rejects.toThrow();
  });

  it('an agent of another conversation → 404', async () => {
    const elsewhere = uniqueId('mcp-elsewhere');
    await createConversation(base, alice.token, elsewhere);
    const stranger = await mintAgentKey(base, alice.token, elsewhere);
    const res = await post(id, INITIALIZE, auth(stranger.token));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual(expect.objectContaining({ code: 'not_found' }));
  });

  it('a foreign Origin → 403, even with good credentials; the own origin is fine', async () => {
    const res = await post(id, INITIALIZE, { ...auth(alice.token), origin: 'https://evil.example' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual(expect.objectContaining({ code: 'forbidden' }));
    const own = await post(id, INITIALIZE, { ...auth(alice.token), origin: base });
    expect(own.status).toBe(200);
    expect(own.headers.get('mcp-session-id')).toBeNull();
    await own.arrayBuffer();
  });
});

/** A 2025-era GET notification stream, open until `close`. */
async function openStream(conversationId: string, token: string): Promise<{ status: number; close(): void }> {
  const abort = new AbortController();
  const res = await fetch(`${base}${mcpPath(conversationId)}`, {
    headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', ...auth(token) },
    signal: abort.signal,
  });
  if (res.status !== 200) await res.arrayBuffer();
  return { status: res.status, close: () => abort.abort() };
}

describe('no sessions: every request is judged by its own credentials', () => {
  it('what one principal could do says nothing about the next request: another principal is judged as itself', async () => {
    const { client } = await connect(id, alice.token);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const list = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} };
    const headers = { 'mcp-protocol-version': '2025-11-25' };
    const stranger = await post(id, list, { ...headers, ...auth(bob.token) });
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toEqual(expect.objectContaining({ code: 'not_found' }));
    const anon = await post(id, list, headers);
    expect(anon.status).toBe(401);
    await anon.arrayBuffer();
    for (const token of [TEST_ADMIN_TOKEN, agent.token, alice.token]) {
      const res = await post(id, list, { ...headers, ...auth(token) });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('example-tool_greet');
    }
  });

  it('a connected client is no use once its key is revoked: the next request is 401', async () => {
    const key = await mintAgentKey(base, alice.token, id);
    const { client } = await connect(id, key.token);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const revoked = await fetch(`${base}/keys/${key.id}`, { method: 'DELETE', headers: auth(alice.token) });
    expect(revoked.status).toBe(204);
    const res = await post(
      id,
      { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} },
      { ...auth(key.token), 'mcp-protocol-version': '2025-11-25' },
    );
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata=');
    await res.arrayBuffer();
    await expect(client.listTools()).rejects.toThrow();
  });

  it('an open notification stream ends within the 5 s bound once its key is revoked (both eras)', async () => {
    const key = await mintAgentKey(base, alice.token, id);
    const ended = async (res: Response): Promise<void> => {
      const reader = res.body!.getReader();
      for (;;) if ((await reader.read()).done) return;
    };
    const legacy = await fetch(`${base}${mcpPath(id)}`, {
      headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', ...auth(key.token) },
    });
    const listen = await post(
      id,
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      },
      { ...auth(key.token), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
    );
    expect([legacy.status, listen.status]).toEqual([200, 200]);
    const revokedAt = Date.now();
    expect((await fetch(`${base}/keys/${key.id}`, { method: 'DELETE', headers: auth(alice.token) })).status).toBe(204);
    await Promise.all([ended(legacy), ended(listen).catch(() => undefined)]);
    expect(Date.now() - revokedAt).toBeLessThan(5000);
  });

  it('one principal holds at most MCP_MAX_STREAMS_PER_PRINCIPAL notification streams; another can still open', async () => {
    const dora = await mintKey(base, 'user', 'dora');
    const mine = uniqueId('mcp-cap');
    await createConversation(base, dora.token, mine);
    const first = await openStream(mine, dora.token);
    const second = await openStream(mine, dora.token);
    try {
      expect([first.status, second.status]).toEqual([200, 200]);
      const third = await openStream(mine, dora.token);
      expect(third.status).toBe(429);
      const listen = await post(
        mine,
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'subscriptions/listen',
          params: {
            notifications: { toolsListChanged: true },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        },
        { ...auth(dora.token), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
      );
      expect(listen.status).toBe(429);
      expect(listen.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await listen.json()).toEqual(expect.objectContaining({ code: 'rate_limited' }));
      // Requests other than streams are not limited by it.
      const { client } = await connect(mine, dora.token);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);

      // Another principal in the same conversation is not affected.
      const agentOfDora = await mintAgentKey(base, dora.token, mine);
      const other = await openStream(mine, agentOfDora.token);
      expect(other.status).toBe(200);
      other.close();
    } finally {
      second.close();
    }
    // Closing a stream frees its place (the server sees the close a moment later).
    await waitFor('a freed stream place', async () => {
      const again = await openStream(mine, dora.token);
      again.close();
      return again.status === 200;
    });
    first.close();
  });

  it("counts an agent key's streams against its conversation owner: more agent keys buy no more (MCP_MAX_STREAMS_PER_OWNER)", async () => {
    const erin = await mintKey(base, 'user', 'erin');
    const conversations = [uniqueId('mcp-owner'), uniqueId('mcp-owner')];
    for (const c of conversations) await createConversation(base, erin.token, c);
    const agents = await Promise.all(conversations.map((c) => mintAgentKey(base, erin.token, c)));
    const held = [
      await openStream(conversations[0]!, erin.token),
      await openStream(conversations[0]!, agents[0]!.token),
      await openStream(conversations[1]!, agents[1]!.token),
    ];
    try {
      expect(held.map((h) => h.status)).toEqual([200, 200, 200]);
      // Each key is under its own cap (2), but erin's keys hold 3 together.
      const fourth = await fetch(`${base}${mcpPath(conversations[1]!)}`, {
        headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', ...auth(agents[1]!.token) },
      });
      expect(fourth.status).toBe(429);
      expect(await fourth.json()).toEqual(
        expect.objectContaining({ code: 'rate_limited', detail: expect.stringContaining('MCP_MAX_STREAMS_PER_OWNER') }),
      );
      // Another owner is not affected.
      const fay = await mintKey(base, 'user', 'fay');
      const hers = uniqueId('mcp-owner');
      await createConversation(base, fay.token, hers);
      const other = await openStream(hers, fay.token);
      expect(other.status).toBe(200);
      other.close();
    } finally {
      held.forEach((h) => h.close());
    }
    await waitFor('a freed owner place', async () => {
      const again = await openStream(conversations[1]!, agents[1]!.token);
      again.close();
      return again.status === 200;
    });
  });
});
