/**
 * /conversations/{id}/mcp for 2025-era clients, checked with the official v1
 * SDK client (1.32.x, protocol 2025-11-25) over a real listening server
 * (API.md, "LLM and MCP interop"): initialize, tools (list, call through
 * negotiate, permission upgrade, policy, invalid args, special actions
 * refused), resources, tools/list_changed on the GET stream after a hot
 * reload, and stateless serving (no sessions). The 2026-07-28 era is in
 * mcp-2026.test.ts, several replicas in mcp-replicas.test.ts. Waits on
 * events, never on timers.
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { bearer, request } from '../support/auth';
import { ENV_ADMIN } from '../../src/auth/authenticator';
import { UnavailableError } from '../../src/core/errors';
import { closeMcpSessions, mcpRouterOf } from '../../src/mcp/conversation-mcp';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';
import { shoutToolModule } from '../support/fixtures';

const HOT_TOOL = shoutToolModule('mcp-hot-tool', 'Added while MCP clients are connected');

const PROVIDER_NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;

let t: TestApp;
let toolsDir: ScratchDir;
let server: HttpServer;
let base: string;

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Resolves once the GET (SSE) stream that carries server notifications is open. */
  sseOpen: Promise<void>;
}
let open: Connected[] = [];

/** The app on a port of its own: MCP clients speak real HTTP. */
async function serve(app: TestApp): Promise<{ server: HttpServer; base: string }> {
  const listening = app.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => listening.once('listening', resolve));
  return { server: listening, base: `http://127.0.0.1:${(listening.address() as AddressInfo).port}` };
}

async function stop(app: TestApp, listening: HttpServer): Promise<void> {
  await closeMcpSessions(app.services);
  await new Promise<void>((resolve) => {
    listening.close(() => resolve());
    listening.closeAllConnections();
  });
}

beforeAll(async () => {
  toolsDir = scratchDir('mcp-tools');
  t = await createTestApp({ TOOLS_DIR: toolsDir.path, TOOLS_HOT_RELOAD: 'true' });
  ({ server, base } = await serve(t));
});

afterEach(async () => {
  for (const c of open) {
    await c.transport.terminateSession().catch(() => undefined);
    await c.client.close();
  }
  open = [];
});

afterAll(async () => {
  if (server) await stop(t, server);
  await t?.close();
  toolsDir?.remove();
});

function mcpUrl(conversationId: string, at = base): URL {
  return new URL(`${at}/conversations/${conversationId}/mcp`);
}

async function connect(conversationId: string, at = base): Promise<Connected> {
  let sseOpened!: () => void;
  const sseOpen = new Promise<void>((resolve) => (sseOpened = resolve));
  const transport = new StreamableHTTPClientTransport(mcpUrl(conversationId, at), {
    requestInit: { headers: bearer() },
    // The client opens its GET stream on its own after initialize; this tells the test when it is up.
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      if ((init?.method ?? 'GET') === 'GET' && res.ok) sseOpened();
      return res;
    },
  });
  const client = new Client({ name: 'mcp-test-client', version: '1.0.0' });
  await client.connect(transport);
  const c = { client, transport, sseOpen };
  open.push(c);
  return c;
}

function text(result: CallToolResult): string {
  const first = result.content[0];
  if (first?.type !== 'text') throw new Error(`expected text content, got ${JSON.stringify(result.content)}`);
  return first.text;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((x) => x.name);
}

/** A raw Streamable HTTP request, for what the SDK client would never send. */
function raw(method: string, conversationId: string, sessionId?: string, body?: unknown, at = base): Promise<Response> {
  return fetch(mcpUrl(conversationId, at), {
    method,
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...bearer(),
      ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

describe('initialize and tools/list', () => {
  it('negotiates the protocol version and announces tools (listChanged) and resources', async () => {
    const { client, transport } = await connect(uniqueId('mcp-init'));
    // Stateless: no session to stick to.
    expect(transport.sessionId).toBeUndefined();
    // The SDK client asks for its latest version; the server accepts it.
    expect(transport.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    expect(transport.protocolVersion).toBe('2025-11-25');
    expect(client.getServerVersion()).toEqual(expect.objectContaining({ name: 'tool-orchestrator' }));
    expect(client.getServerCapabilities()).toEqual(
      expect.objectContaining({ tools: { listChanged: true }, resources: { subscribe: true } }),
    );
  });

  it('lists every action of every tool as tool_action, and never the special actions', async () => {
    const { client } = await connect(uniqueId('mcp-list'));
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name);
    for (const name of names) expect(name).toMatch(PROVIDER_NAME_RE);
    expect(names).toEqual(
      expect.arrayContaining([
        'example-tool_greet',
        'calculator_add',
        'math-service_add',
        'data-tool_create-resource',
        'data-tool_delete-resource',
      ]),
    );
    expect(names.filter((n) => n.includes('list-tools') || n.includes('upgrade'))).toEqual([]);

    // The same actions as GET /tools, one per action.
    const rest = await request(t.app).get('/tools').expect(200);
    const restNames = (rest.body.tools as { actions: { providerName: string }[] }[]).flatMap((x) =>
      x.actions.map((a) => a.providerName),
    );
    expect([...names].sort()).toEqual([...restNames].sort());

    const greet = tools.find((x) => x.name === 'example-tool_greet')!;
    expect(greet.description).toContain('example-tool');
    expect(greet.inputSchema.type).toBe('object');
    expect(greet.inputSchema.properties).toHaveProperty('name');
    expect(greet.annotations).toEqual(
      expect.objectContaining({ readOnlyHint: true, destructiveHint: false, idempotentHint: true }),
    );
    const create = tools.find((x) => x.name === 'data-tool_create-resource')!;
    expect(create.description).toContain('data-tool');
    expect(create.annotations).toEqual(
      expect.objectContaining({ readOnlyHint: false, destructiveHint: false, idempotentHint: false }),
    );
    const del = tools.find((x) => x.name === 'data-tool_delete-resource')!;
    expect(del.annotations).toEqual(expect.objectContaining({ readOnlyHint: false, destructiveHint: true }));
  });
});

describe('tools/call', () => {
  it('runs allowed actions through negotiate and returns their output', async () => {
    const id = uniqueId('mcp-call');
    const negotiate = jest.spyOn(t.services.manager, 'negotiate');
    try {
      const { client } = await connect(id);
      const greet = await call(client, 'example-tool_greet', { name: 'MCP' });
      expect(greet.isError).toBeFalsy();
      expect(JSON.parse(text(greet))).toEqual({ message: 'Hello, MCP!' });
      expect(greet.structuredContent).toEqual({ message: 'Hello, MCP!' });

      const add = await call(client, 'calculator_add', { a: 2, b: 3 });
      expect(add.isError).toBeFalsy();
      expect(add.structuredContent).toEqual({ result: 5 });
      expect(JSON.parse(text(add))).toEqual({ result: 5 });

      // Every call went the one way in, as the session's principal (the test admin).
      // With the HTTP request's X-Request-Id, for the audit.
      const audit = { meta: { requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown } };
      expect(negotiate).toHaveBeenCalledWith(
        ENV_ADMIN,
        id,
        { action: 'example-tool_greet', args: { name: 'MCP' } },
        audit,
      );
      expect(negotiate).toHaveBeenCalledWith(ENV_ADMIN, id, { action: 'calculator_add', args: { a: 2, b: 3 } }, audit);
    } finally {
      negotiate.mockRestore();
    }
  });

  it('a write before an upgrade is an isError result with the approval reason; after the owner upgrades it runs', async () => {
    const id = uniqueId('mcp-upgrade');
    const { client } = await connect(id);
    const args = { name: 'notes', data: { items: [1, 2, 3] } };

    const refused = await call(client, 'data-tool_create-resource', args);
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^Permission upgrade required/);
    expect(text(refused)).toContain('upgrade:data-tool:level-2');
    // The code in _meta and the text, never as structuredContent (the action's outputSchema does not describe it).
    expect(refused.structuredContent).toBeUndefined();
    expect(refused._meta).toEqual(expect.objectContaining({ code: 'permission_required', requiresApproval: true }));
    expect(text(refused)).toContain('[code: permission_required]');
    await request(t.app).get(`/conversations/${id}/resources/notes`).expect(404);

    await request(t.app).put(`/conversations/${id}/permissions/data-tool`).send({ level: 2 }).expect(200);

    const created = await call(client, 'data-tool_create-resource', args);
    expect(created.isError).toBeFalsy();
    expect(created.structuredContent).toEqual(
      expect.objectContaining({
        message: 'Resource created by data-tool',
        resource: expect.objectContaining({ name: 'notes', data: { items: [1, 2, 3] }, createdBy: 'data-tool' }),
      }),
    );
    const stored = await request(t.app).get(`/conversations/${id}/resources/notes`).expect(200);
    expect(stored.body.data).toEqual({ items: [1, 2, 3] });
  });

  it('refuses the special actions without routing them (unknown tools, -32602): no upgrade happens over MCP', async () => {
    const id = uniqueId('mcp-special');
    const negotiate = jest.spyOn(t.services.manager, 'negotiate');
    try {
      const { client } = await connect(id);
      for (const name of ['upgrade:data-tool:level-3', 'list-tools', 'UPGRADE:data-tool:level-2']) {
        const err = await call(client, name).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(McpError);
        expect((err as McpError).code).toBe(ErrorCode.InvalidParams);
        expect((err as McpError).message).toContain(`Unknown tool: ${name} (`);
        expect((err as McpError).message).toContain('not exposed over MCP');
      }
      expect(negotiate).not.toHaveBeenCalled();
    } finally {
      negotiate.mockRestore();
    }
    const perms = await request(t.app).get(`/conversations/${id}/permissions`);
    if (perms.status === 200) {
      const dataTool = (perms.body.tools as { tool: string; level: number }[]).find((x) => x.tool === 'data-tool');
      expect(dataTool?.level).toBe(1);
    } else {
      expect(perms.status).toBe(404);
    }
    const history = await request(t.app).get(`/conversations/${id}/permissions/history`);
    if (history.status === 200) expect(history.body.events).toEqual([]);
  });

  it('invalid args are an isError result naming the field', async () => {
    const { client } = await connect(uniqueId('mcp-args'));
    const res = await call(client, 'calculator_add', { a: 'two', b: 3 });
    expect(res.isError).toBe(true);
    expect(text(res)).toMatch(/^Invalid args for calculator\/add: a: .* \[code: invalid_args\]$/);
    expect(res.structuredContent).toBeUndefined();
    expect(res._meta).toEqual(expect.objectContaining({ code: 'invalid_args' }));
  });

  it('an unknown tool is the JSON-RPC error -32602 naming the whole name, never routed', async () => {
    const { client } = await connect(uniqueId('mcp-unknown'));
    const negotiate = jest.spyOn(t.services.manager, 'negotiate');
    try {
      // No such tool; a tool without that action; a near miss negotiate's lenient routing would have taken.
      for (const name of ['no-such-tool_frobnicate', 'calculator_frobnicate', 'calculator/add', 'Calculator_Add']) {
        const err = await call(client, name).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(McpError);
        expect([(err as McpError).code, (err as McpError).message]).toEqual([
          ErrorCode.InvalidParams,
          `MCP error -32602: Unknown tool: ${name}`,
        ]);
      }
      expect(negotiate).not.toHaveBeenCalled();
    } finally {
      negotiate.mockRestore();
    }
  });

  it('database trouble during a call answers as REST does (503, nothing of the driver), and the session stays usable', async () => {
    const { client } = await connect(uniqueId('mcp-db'));
    // As the stores throw it (src/db/sql.ts): the driver's error marked unavailable, REST's 503.
    const down = new UnavailableError(
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    );
    const negotiate = jest.spyOn(t.services.manager, 'negotiate').mockRejectedValueOnce(down);
    try {
      const err = await client.callTool({ name: 'calculator_add', arguments: { a: 1, b: 1 } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      // The endpoint's rule is REST's (core/errors isUnavailable): a 503 problem, not a tool result.
      expect(err).toBeInstanceOf(StreamableHTTPError);
      expect((err as StreamableHTTPError).code).toBe(503);
      expect((err as StreamableHTTPError).message).toContain('The database is unavailable');
      expect((err as StreamableHTTPError).message).not.toContain('5432');
    } finally {
      negotiate.mockRestore();
    }
    const again = await call(client, 'calculator_add', { a: 1, b: 1 });
    expect(again.structuredContent).toEqual({ result: 2 });
  });
});

describe('policy', () => {
  it('a conversation denying calculator/* does not list calculator tools, and calling one is an isError result', async () => {
    const id = uniqueId('mcp-policy');
    await request(t.app)
      .post('/conversations')
      .send({ id, policy: { deny: ['calculator/*'] } })
      .expect(201);
    const { client } = await connect(id);
    const names = await toolNames(client);
    expect(names.filter((n) => n.startsWith('calculator_'))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['math-service_add', 'example-tool_greet']));

    const res = await call(client, 'calculator_add', { a: 1, b: 2 });
    expect(res.isError).toBe(true);
    expect(text(res)).toContain('denied');
    expect(res._meta).toEqual(expect.objectContaining({ code: 'denied', alignment: 'contradiction' }));

    // Another conversation is not affected.
    const other = await connect(uniqueId('mcp-nopolicy'));
    expect(await toolNames(other.client)).toContain('calculator_add');
  });
});

describe('resources', () => {
  it('lists the shared context as context://ID/NAME and reads a resource as JSON', async () => {
    const id = uniqueId('mcp-res');
    await request(t.app)
      .put(`/conversations/${id}/resources/alpha`)
      .send({ data: { n: 1 } })
      .expect(201);
    await request(t.app)
      .put(`/conversations/${id}/resources/beta`)
      .send({ data: [1, 2] })
      .expect(201);
    const { client } = await connect(id);

    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([`context://${id}/alpha`, `context://${id}/beta`]);
    expect(resources[0]).toEqual(expect.objectContaining({ name: 'alpha', mimeType: 'application/json' }));

    const read = await client.readResource({ uri: `context://${id}/alpha` });
    expect(read.contents).toHaveLength(1);
    const content = read.contents[0]!;
    expect(content.uri).toBe(`context://${id}/alpha`);
    expect(content.mimeType).toBe('application/json');
    const resource = JSON.parse((content as { text: string }).text);
    expect(resource).toEqual(
      expect.objectContaining({ name: 'alpha', data: { n: 1 }, createdBy: 'client', version: 1 }),
    );
  });

  it('a missing resource, another conversation or a malformed URI is an MCP error', async () => {
    const id = uniqueId('mcp-res-err');
    const otherId = uniqueId('mcp-res-other');
    await request(t.app).put(`/conversations/${otherId}/resources/secret`).send({ data: 'theirs' }).expect(201);
    const { client } = await connect(id);

    const failure = (uri: string): Promise<unknown> =>
      client.readResource({ uri }).then(
        () => undefined,
        (e: unknown) => e,
      );

    const missing = await failure(`context://${id}/nothing-here`);
    expect(missing).toBeInstanceOf(McpError);
    // -32602 with the URI, as 2026-07-28 has it (the SDK v2 answers both eras so).
    expect((missing as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((missing as McpError).message).toContain('Resource not found');

    const foreign = await failure(`context://${otherId}/secret`);
    expect(foreign).toBeInstanceOf(McpError);
    expect((foreign as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((foreign as McpError).message).not.toContain('theirs');

    const malformed = await failure('file:///etc/passwd');
    expect((malformed as McpError).code).toBe(ErrorCode.InvalidParams);

    expect((await client.listResources()).resources).toEqual([]);
  });
});

describe('tools/list_changed', () => {
  it('is sent to every open session when a tool file appears in TOOLS_DIR; the new tool is then listed and callable', async () => {
    const first = await connect(uniqueId('mcp-hot-a'));
    const second = await connect(uniqueId('mcp-hot-b'));
    const notified = [first, second].map(
      ({ client }) =>
        new Promise<void>((resolve) =>
          client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
        ),
    );
    await Promise.all([first.sseOpen, second.sseOpen]);
    expect(await toolNames(first.client)).not.toContain('mcp-hot-tool_shout-text');

    toolsDir.write('mcp-hot-tool.js', HOT_TOOL);
    await Promise.all(notified);
    // A write may be seen as several file events; the registry has the tool once any reload saw the file.
    await t.registry.reload();

    expect(await toolNames(first.client)).toContain('mcp-hot-tool_shout-text');
    const res = await call(second.client, 'mcp-hot-tool_shout-text', { text: 'hi' });
    expect(res.structuredContent).toEqual({ shouted: 'HI' });
  });
});

describe('stateless serving', () => {
  it('rejects a malformed conversation id with problem+json 400', async () => {
    const res = await raw('POST', 'bad%20id', undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(await res.json()).toEqual(expect.objectContaining({ code: 'validation_failed' }));
  });

  it('answers a 2025 request without initialize or session: nothing is remembered between requests', async () => {
    const id = uniqueId('mcp-nosession');
    const res = await raw('POST', id, undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    expect(await res.text()).toContain('example-tool_greet');
  });

  it('a client keeps working across the server forgetting everything: a second app on the same database answers it', async () => {
    const id = uniqueId('mcp-any-replica');
    const { client } = await connect(id);
    const replica = await createTestApp({}, { replicaOf: t });
    const { server: replicaServer, base: replicaBase } = await serve(replica);
    try {
      // The same client, its next requests sent to the other instance.
      const other = await connect(id, replicaBase);
      expect((await call(other.client, 'calculator_add', { a: 1, b: 2 })).structuredContent).toEqual({ result: 3 });
      expect((await call(client, 'calculator_add', { a: 2, b: 2 })).structuredContent).toEqual({ result: 4 });
    } finally {
      await stop(replica, replicaServer);
      await replica.close();
    }
  });

  it('DELETE (2025 session termination) is 405: there is no session to end; every 405 here names GET and POST', async () => {
    const id = uniqueId('mcp-delete');
    // RFC 9110: Allow lists exactly what the path serves. GET and POST are served (not 405); nothing else is,
    // DELETE included (the SDK's stateless serving would answer it 405 too), nor HEAD (GET opens a stream).
    for (const method of ['DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS']) {
      const res = await raw(method, id);
      expect([method, res.status, res.headers.get('allow')]).toEqual([method, 405, 'GET, POST']);
      if (method !== 'HEAD') expect(await res.json()).toEqual(expect.objectContaining({ code: 'method_not_allowed' }));
    }
    const get = await fetch(mcpUrl(id), { headers: { accept: 'text/event-stream', ...bearer() } });
    expect(get.status).toBe(200);
    await get.body?.cancel();
    const post = await raw('POST', id, undefined, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(post.status).toBe(200);
    await post.text();
  });

  it('the GET stream needs Accept: text/event-stream, and is no 2026-07-28 method', async () => {
    const id = uniqueId('mcp-get');
    const plain = await fetch(mcpUrl(id), { headers: { accept: 'application/json', ...bearer() } });
    expect(plain.status).toBe(406);
    expect(await plain.json()).toEqual(expect.objectContaining({ jsonrpc: '2.0' }));
    const modern = await fetch(mcpUrl(id), {
      headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28', ...bearer() },
    });
    expect(modern.status).toBe(405);
    await modern.text();
  });
});

// Last: closing the sessions of these services also stops their router from opening new ones.
describe('shutdown', () => {
  // On an app of its own: after closeMcpSessions the app accepts no MCP session,
  // so on the shared one every later test would depend on this one running last.
  it('closeMcpSessions ends every open GET stream; later requests get 503', async () => {
    const own = await createTestApp();
    const { server: ownServer, base: at } = await serve(own);
    try {
      const id = uniqueId('mcp-shutdown');
      const a = await connect(id, at);
      const b = await connect(uniqueId('mcp-shutdown-b'), at);
      await Promise.all([a.sseOpen, b.sseOpen]);
      const router = mcpRouterOf(own.services);
      expect(router?.streamCount).toBe(2);

      await closeMcpSessions(own.services);
      expect(router?.streamCount).toBe(0);

      const after = await raw('POST', id, undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, at);
      expect(after.status).toBe(503);
      await after.text();
      expect(own.registry.listenerCount('change')).toBe(1); // only the catalog's
      // The shared app is untouched.
      expect(await toolNames((await connect(uniqueId('mcp-still-open'))).client)).toContain('calculator_add');
    } finally {
      await stop(own, ownServer);
      await own.close();
    }
  });
});
