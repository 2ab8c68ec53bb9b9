/**
 * /conversations/{id}/mcp in protocol 2026-07-28 (API.md, "LLM and MCP
 * interop"), with the official SDK v2 client pinned to that revision over a
 * real listening server: server/discover, tools/list (order, filtering,
 * caching hints), tools/call through negotiate (structured output, approval
 * ids), resources, subscriptions/listen after a hot reload; and, with raw
 * requests, the JSON-RPC errors of the revision for what a client gets wrong.
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { bearer, request } from '../support/auth';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';
import { mintKey } from '../support/identity';
import { shoutToolModule } from '../support/fixtures';

export const MODERN = '2026-07-28';

let t: TestApp;
let toolsDir: ScratchDir;
let server: HttpServer;
let base: string;
let open: Client[] = [];

beforeAll(async () => {
  toolsDir = scratchDir('mcp2026-tools');
  t = await createTestApp({ TOOLS_DIR: toolsDir.path, TOOLS_HOT_RELOAD: 'true' });
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  for (const c of open) await c.close();
  open = [];
});

afterAll(async () => {
  await closeMcpSessions(t.services);
  await new Promise<void>((resolve) => {
    server?.close(() => resolve());
    server?.closeAllConnections();
  });
  await t?.close();
  toolsDir?.remove();
});

const mcpUrl = (conversationId: string): URL => new URL(`${base}/conversations/${conversationId}/mcp`);

async function connect(conversationId: string, headers: Record<string, string> = bearer()): Promise<Client> {
  const client = new Client(
    { name: 'mcp-2026-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(conversationId), { requestInit: { headers } }));
  open.push(client);
  return client;
}

const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A raw 2026-07-28 POST; `headers` override the matching ones. */
function post(conversationId: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const message = body as { method?: string; params?: { name?: string; uri?: string } };
  const name = message.params?.name ?? message.params?.uri;
  return fetch(mcpUrl(conversationId), {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': MODERN,
      ...(message.method ? { 'mcp-method': message.method } : {}),
      ...(name ? { 'mcp-name': name } : {}),
      ...bearer(),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The JSON-RPC message of a response (a JSON body or a one-event SSE stream). */
async function rpc(
  res: Response,
): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }> {
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const data = text.split('\n').find((line) => line.startsWith('data: '));
    return JSON.parse(data!.slice(6)) as never;
  }
  return JSON.parse(text) as never;
}

describe('discover and tools/list', () => {
  it('connects without initialize, on 2026-07-28, and discovers tools (listChanged) and resources', async () => {
    const client = await connect(uniqueId('mcp26-discover'));
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerVersion()).toEqual(expect.objectContaining({ name: 'tool-orchestrator' }));
    expect(client.getServerCapabilities()).toEqual(
      expect.objectContaining({ tools: { listChanged: true }, resources: { subscribe: true } }),
    );
    const res = await post(uniqueId('mcp26-raw'), {
      jsonrpc: '2.0',
      id: 1,
      method: 'server/discover',
      params: { _meta: META },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const { result } = await rpc(res);
    expect(result?.supportedVersions).toEqual(expect.arrayContaining([MODERN]));
  });

  it('lists the mcp definitions in a stable order, private to the caller, with a ttl', async () => {
    const id = uniqueId('mcp26-list');
    const client = await connect(id);
    const first = await client.listTools();
    const names = first.tools.map((x) => x.name);
    expect(names).toEqual(
      expect.arrayContaining(['example-tool_greet', 'calculator_add', 'data-tool_create-resource']),
    );
    expect(names.filter((n) => n.includes('list-tools') || n.includes('upgrade'))).toEqual([]);
    // The same as GET /tools/definitions?format=mcp, in the same order.
    const rest = await request(t.app).get(`/tools/definitions?format=mcp`).expect(200);
    expect(names).toEqual((rest.body.tools as { name: string }[]).map((x) => x.name));
    expect((await client.listTools()).tools.map((x) => x.name)).toEqual(names);

    const raw = await rpc(await post(id, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: META } }));
    expect(raw.result).toEqual(
      expect.objectContaining({ cacheScope: 'private', ttlMs: expect.any(Number) as unknown }),
    );
    expect(raw.result?.ttlMs).toBeGreaterThan(0);
  });

  it('leaves out what the conversation policy denies', async () => {
    const id = uniqueId('mcp26-policy');
    await request(t.app)
      .post('/conversations')
      .send({ id, policy: { deny: ['calculator/*'] } })
      .expect(201);
    const names = (await (await connect(id)).listTools()).tools.map((x) => x.name);
    expect(names.filter((n) => n.startsWith('calculator_'))).toEqual([]);
    expect(names).toContain('math-service_add');
  });
});

describe('tools/call', () => {
  it('runs through negotiate and returns the output as text and structuredContent', async () => {
    const client = await connect(uniqueId('mcp26-call'));
    const add = await client.callTool({ name: 'calculator_add', arguments: { a: 2, b: 3 } });
    expect(add.isError).toBeFalsy();
    expect(add.structuredContent).toEqual({ result: 5 });
    expect(add.content).toEqual([{ type: 'text', text: JSON.stringify({ result: 5 }) }]);
  });

  it('a write before an upgrade is an isError result naming the approval reason; the special actions are unknown tools (-32602)', async () => {
    const id = uniqueId('mcp26-upgrade');
    const client = await connect(id);
    const refused = await client.callTool({ name: 'data-tool_create-resource', arguments: { name: 'n', data: 1 } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('upgrade:data-tool:level-2');
    await request(t.app).get(`/conversations/${id}/resources/n`).expect(404);
    await expect(client.callTool({ name: 'upgrade:data-tool:level-3', arguments: {} })).rejects.toEqual(
      expect.objectContaining({
        code: -32602,
        message: expect.stringContaining('Unknown tool: upgrade:data-tool:level-3 (') as unknown,
      }),
    );
  });
});

describe('resources', () => {
  it('lists and reads the shared context; a missing one is -32602', async () => {
    const id = uniqueId('mcp26-res');
    await request(t.app)
      .put(`/conversations/${id}/resources/alpha`)
      .send({ data: { n: 1 } })
      .expect(201);
    const client = await connect(id);
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual([`context://${id}/alpha`]);
    const read = await client.readResource({ uri: `context://${id}/alpha` });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual(
      expect.objectContaining({ data: { n: 1 } }),
    );
    await expect(client.readResource({ uri: `context://${id}/missing` })).rejects.toEqual(
      expect.objectContaining({ code: -32602 }),
    );
  });
});

describe('subscriptions/listen', () => {
  it('tells a listener that the tools changed when a tool file appears; the new tool is then listed', async () => {
    const client = await connect(uniqueId('mcp26-listen'));
    const changed = new Promise<void>((resolve) =>
      client.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
    );
    const subscription = await client.listen({ toolsListChanged: true });
    expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
    toolsDir.write('mcp26-hot.js', shoutToolModule('mcp26-hot', 'Added while a 2026 client listens'));
    await changed;
    await t.registry.reload();
    expect((await client.listTools()).tools.map((x) => x.name)).toContain('mcp26-hot_shout-text');
    await subscription.close();
  });
});

describe('JSON-RPC errors of the revision', () => {
  const list = { jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: META } };

  it('malformed JSON is -32700 (400), not problem+json', async () => {
    const res = await post(uniqueId('mcp26-parse'), '{"jsonrpc": "2.0", "id": 1,', { 'mcp-method': 'tools/list' });
    expect(res.status).toBe(400);
    expect((await rpc(res)).error?.code).toBe(-32700);
  });

  it('a batch is -32600 (400) and runs nothing, in either era (one request, one rate-limit token, one message)', async () => {
    const id = uniqueId('mcp26-batch');
    await request(t.app).post('/conversations').send({ id }).expect(201);
    const call = (n: number, modern: boolean): Record<string, unknown> => ({
      jsonrpc: '2.0',
      id: n,
      method: 'tools/call',
      params: {
        name: 'data-tool_create-resource',
        arguments: { name: `b${n}`, data: n },
        ...(modern ? { _meta: META } : {}),
      },
    });
    const modern = await post(id, [call(1, true), call(2, true)], { 'mcp-method': 'tools/call' });
    expect(modern.status).toBe(400);
    expect((await rpc(modern)).error?.code).toBe(-32600);
    for (const version of ['2025-06-18', '2025-11-25']) {
      // As a 2025 client sends it: no Mcp-Method header, no per-request _meta.
      const res = await fetch(mcpUrl(id), {
        method: 'POST',
        headers: {
          ...bearer(),
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          'mcp-protocol-version': version,
        },
        body: JSON.stringify([call(3, false), call(4, false)]),
      });
      expect(res.status).toBe(400);
      expect((await rpc(res)).error?.code).toBe(-32600);
    }
    expect((await request(t.app).get(`/conversations/${id}/resources`).expect(200)).body.resources).toEqual([]);
  });

  it('only a JSON-RPC request creates the conversation on first use: a GET, a DELETE or a refused body does not', async () => {
    const id = uniqueId('mcp26-nocreate');
    const user = await mintKey(base, 'user', uniqueId('mcp26-user'));
    const auth = { Authorization: `Bearer ${user.token}` };
    // A GET is access-checked (the id is not this user's: 404); DELETE is not served here at all (405).
    for (const [method, status] of [
      ['GET', 404],
      ['DELETE', 405],
    ] as const) {
      const res = await fetch(mcpUrl(id), {
        method,
        headers: { ...auth, 'mcp-protocol-version': '2025-11-25', accept: 'text/event-stream' },
      });
      expect(res.status).toBe(status);
      await res.body?.cancel();
    }
    // Access is decided before the body: the id is not this user's (yet), so 404 rather than 415.
    expect((await post(id, 'not json', { ...auth, 'content-type': 'text/plain' })).status).toBe(404);
    expect((await post(id, '{"jsonrpc":', { ...auth, 'mcp-method': 'tools/list' })).status).toBe(400);
    await request(t.app).get(`/conversations/${id}`).expect(404);
    expect((await post(id, list, auth)).status).toBe(200);
    expect((await request(t.app).get(`/conversations/${id}`).expect(200)).body.owner).toBe(user.subject);
  });

  it('a GET stream under an unknown protocol version is 400; under a later revision (no GET streams) 405', async () => {
    for (const [version, status] of [
      ['zzz', 400],
      ['2099-01-01', 405],
    ] as const) {
      const res = await fetch(mcpUrl(uniqueId('mcp26-getversion')), {
        headers: { ...bearer(), accept: 'text/event-stream', 'mcp-protocol-version': version },
      });
      expect(res.status).toBe(status);
      await res.body?.cancel();
    }
  });

  it('a body that is not UTF-8 is -32700 (400), not problem+json', async () => {
    const res = await fetch(mcpUrl(uniqueId('mcp26-utf8')), {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"'), Buffer.from([0xff]), Buffer.from('"}')]),
    });
    expect(res.status).toBe(400);
    expect((await rpc(res)).error?.code).toBe(-32700);
  });

  it('a body that is not JSON is 415', async () => {
    const res = await post(uniqueId('mcp26-media'), 'tools/list please', { 'content-type': 'text/plain' });
    expect(res.status).toBe(415);
    expect((await rpc(res)).error).toBeDefined();
  });

  it('resources/read and resources/list with params of the wrong type are -32602 like any bad params', async () => {
    const id = uniqueId('mcp26-params');
    const invalidCursor = await post(id, {
      jsonrpc: '2.0',
      id: 8,
      method: 'resources/list',
      params: { cursor: '../x', _meta: META },
    });
    const status = invalidCursor.status; // how the SDK answers -32602 from a handler
    expect((await rpc(invalidCursor)).error?.code).toBe(-32602);
    for (const params of [{ uri: 42 }, {}]) {
      const res = await post(id, {
        jsonrpc: '2.0',
        id: 9,
        method: 'resources/read',
        params: { ...params, _meta: META },
      });
      expect(res.status).toBe(status);
      const answer = (await rpc(res)) as { error?: { code: number }; id?: unknown };
      expect([answer.error?.code, answer.id]).toEqual([-32602, 9]);
    }
    const res = await post(id, {
      jsonrpc: '2.0',
      id: 10,
      method: 'resources/list',
      params: { cursor: 7, _meta: META },
    });
    expect((await rpc(res)).error?.code).toBe(-32602);
  });

  it('tools/call without a name is -32602', async () => {
    const res = await post(uniqueId('mcp26-noname'), {
      jsonrpc: '2.0',
      id: 6,
      method: 'tools/call',
      params: { arguments: {}, _meta: META },
    });
    expect((await rpc(res)).error?.code).toBe(-32602);
  });

  it('an Mcp-Method header that differs from the body is a HeaderMismatch 400', async () => {
    const res = await post(uniqueId('mcp26-mismatch'), list, { 'mcp-method': 'tools/call' });
    expect(res.status).toBe(400);
    expect((await rpc(res)).error?.code).toBe(-32020);
  });

  it('an Mcp-Name header that differs from params.name is a HeaderMismatch 400, and nothing runs', async () => {
    const id = uniqueId('mcp26-name');
    const res = await post(
      id,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'calculator_add', arguments: { a: 1, b: 1 }, _meta: META },
      },
      { 'mcp-name': 'calculator_subtract' },
    );
    expect(res.status).toBe(400);
    expect((await rpc(res)).error?.code).toBe(-32020);
  });

  it('an unsupported protocol version is -32022 naming the supported ones', async () => {
    const future = { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
    const res = await post(
      uniqueId('mcp26-version'),
      { ...list, params: { _meta: future } },
      { 'mcp-protocol-version': '2099-01-01' },
    );
    expect(res.status).toBe(400);
    const { error } = await rpc(res);
    expect(error?.code).toBe(-32022);
  });

  it('a protocol version header that differs from the body is a 400', async () => {
    const res = await post(uniqueId('mcp26-vmismatch'), list, { 'mcp-protocol-version': '2025-11-25' });
    expect(res.status).toBe(400);
    expect((await rpc(res)).error).toBeDefined();
  });

  it('an unknown method is -32601 (404)', async () => {
    const res = await post(uniqueId('mcp26-method'), {
      jsonrpc: '2.0',
      id: 8,
      method: 'prompts/list',
      params: { _meta: META },
    });
    expect(res.status).toBe(404);
    expect((await rpc(res)).error?.code).toBe(-32601);
  });
});
