/**
 * The MCP endpoint as the clients hosts are built on use it: the official
 * SDK 1.x client (1.32.2, protocol 2025-11-25), the SDK v2 client (pinned to
 * 2026-07-28), the AI SDK's `@ai-sdk/mcp` (`createMCPClient` over http, its
 * `tools()` then `execute`) and LangChain's `@langchain/mcp-adapters`
 * (`MultiServerMCPClient`, `getTools()` then `invoke`). Each lists the tools
 * first, as every host does: the clients then hold each tool's
 * `outputSchema`, and the 1.x client (so LangChain's adapters) checks a
 * result's `structuredContent` against it even on `isError` results, throwing
 * -32602 before the model sees anything when it does not conform.
 *
 * So every outcome an MCP call can produce is run through each of them:
 * success, each refusal code (its code, and its approval id, in the text the
 * model sees and in `_meta` where the client hands results over whole), the
 * approval retry each can make, and the JSON-RPC error of an unknown tool.
 * (`@ai-sdk/mcp` declares `engines: node >= 22`; it runs here on Node 20.20 as
 * on 24. It is ESM only: loaded with import(), under --experimental-vm-modules.)
 */
import type { Server } from 'node:http';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { type MintedKey, createConversation, listen, mintAgentKey, mintKey, stopListening } from '../support/identity';
import { waitFor } from '../support/poll';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { type TestApp, createTestApp } from '../support/test-app';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';

/** A TOOLS_DIR tool whose actions fail: one throws, one breaks its declared output schema. */
const FAILING_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'failing-tool', version: '1.0.0', description: 'Fails on purpose',
  actions: {
    'throw-error': defineAction({
      description: 'Throws',
      level: 1,
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      handler: async () => { throw new Error('boom'); },
    }),
    'break-schema': defineAction({
      description: 'Declares a boolean, returns a string',
      level: 1,
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      handler: async () => ({ ok: 'yes' }),
    }),
  },
});
`;

/** What a host gets back from one tool call, as its model or its code sees it. */
interface Seen {
  isError: boolean;
  /** The text the model is shown. */
  text: string;
  structured?: unknown;
  /** The result's `_meta`, for hosts that hand the result over whole. */
  meta?: Record<string, unknown>;
}

interface HostSession {
  /** The tool names the host listed when it started. */
  listed: string[];
  /** Calls a listed tool as the host does (the model asked for it). */
  call(name: string, args: Record<string, unknown>, approvalId?: string): Promise<Seen>;
  /** A tools/call of any name, for the protocol error of an unknown one (undefined: the host cannot send it). */
  callAnyName?: (name: string) => Promise<unknown>;
  close(): Promise<void>;
}

interface Host {
  name: string;
  /** Whether the host can pass `_meta.approvalId` on a call (the MCP form of an approval retry). */
  sendsApprovalId: boolean;
  /** Whether the host hands the result's `_meta` to its code. */
  showsMeta: boolean;
  open(conversationId: string, token: string, at?: string): Promise<HostSession>;
}

let t: TestApp;
/** A replica on the same database whose approval requests lapse after a second (APPROVAL_TTL_SECONDS). */
let shortTtl: TestApp;
let toolsDir: ScratchDir;
let server: Server | undefined;
let shortTtlServer: Server | undefined;
let base: string;
let shortTtlBase: string;
let alice: MintedKey;

beforeAll(async () => {
  toolsDir = scratchDir('mcp-clients-tools');
  toolsDir.write('failing-tool.js', FAILING_TOOL);
  t = await createTestApp({ TOOLS_DIR: toolsDir.path, RESOURCE_MAX_BYTES: '1kb' });
  ({ server, base } = await listen(t.app));
  shortTtl = await createTestApp({ APPROVAL_TTL_SECONDS: '1' }, { replicaOf: t });
  ({ server: shortTtlServer, base: shortTtlBase } = await listen(shortTtl.app));
  alice = await mintKey(base, 'user', uniqueId('alice'));
});

afterAll(async () => {
  if (shortTtl) await closeMcpSessions(shortTtl.services);
  await stopListening(shortTtlServer);
  await shortTtl?.close();
  if (t) await closeMcpSessions(t.services);
  await stopListening(server);
  await t?.close();
  toolsDir?.remove();
});

const mcpUrl = (id: string, at = base): URL => new URL(`${at}/conversations/${id}/mcp`);
const auth = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

interface RawResult {
  isError?: boolean;
  content?: unknown;
  structuredContent?: unknown;
  _meta?: Record<string, unknown>;
}

function textOf(content: unknown): string {
  return (Array.isArray(content) ? (content as { type?: string; text?: string }[]) : [])
    .map((c) => (c.type === 'text' ? (c.text ?? '') : ''))
    .join('\n');
}

function seenOf(result: RawResult): Seen {
  return {
    isError: result.isError === true,
    text: textOf(result.content),
    ...(result.structuredContent !== undefined ? { structured: result.structuredContent } : {}),
    ...(result._meta !== undefined ? { meta: result._meta } : {}),
  };
}

const sdkV1: Host = {
  name: '@modelcontextprotocol/sdk 1.32.2',
  sendsApprovalId: true,
  showsMeta: true,
  async open(id, token, at = base) {
    const client = new ClientV1({ name: 'host-v1', version: '1.0.0' });
    await client.connect(new TransportV1(mcpUrl(id, at), { requestInit: { headers: auth(token) } }));
    const listed = (await client.listTools()).tools.map((x) => x.name);
    const callTool = (name: string, args: Record<string, unknown>, approvalId?: string): Promise<RawResult> =>
      client.callTool({ name, arguments: args, ...(approvalId ? { _meta: { approvalId } } : {}) });
    return {
      listed,
      call: async (name, args, approvalId) => seenOf(await callTool(name, args, approvalId)),
      callAnyName: (name) => callTool(name, {}),
      close: () => client.close(),
    };
  },
};

const sdkV2: Host = {
  name: '@modelcontextprotocol/client 2.4 (2026-07-28)',
  sendsApprovalId: true,
  showsMeta: true,
  async open(id, token, at = base) {
    const client = new ClientV2(
      { name: 'host-v2', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new TransportV2(mcpUrl(id, at), { requestInit: { headers: auth(token) } }));
    const listed = (await client.listTools()).tools.map((x) => x.name);
    const callTool = (name: string, args: Record<string, unknown>, approvalId?: string): Promise<RawResult> =>
      client.callTool({ name, arguments: args, ...(approvalId ? { _meta: { approvalId } } : {}) });
    return {
      listed,
      call: async (name, args, approvalId) => seenOf(await callTool(name, args, approvalId)),
      callAnyName: (name) => callTool(name, {}),
      close: () => client.close(),
    };
  },
};

/** An AI SDK tool as `tools()` builds it: `execute` is what generateText runs for a tool call of the model. */
type AiSdkTool = {
  execute?: (args: unknown, options: { toolCallId: string; messages: unknown[] }) => Promise<unknown>;
};

const aiSdk: Host = {
  name: '@ai-sdk/mcp 2.0',
  // Its execute() and callTool() send name and arguments only.
  sendsApprovalId: false,
  // execute() returns the CallToolResult of an isError call as it came.
  showsMeta: true,
  async open(id, token, at = base) {
    // ESM only (the suite runs with --experimental-vm-modules).
    const { createMCPClient } = await import('@ai-sdk/mcp');
    const client = await createMCPClient({
      transport: { type: 'http', url: mcpUrl(id, at).href, headers: auth(token) },
    });
    const tools = (await client.tools()) as unknown as Record<string, AiSdkTool>;
    let calls = 0;
    return {
      listed: Object.keys(tools),
      call: async (name, args) => {
        const execute = tools[name]?.execute;
        if (!execute) throw new Error(`${name} is not one of the listed tools`);
        return seenOf((await execute(args, { toolCallId: `call-${++calls}`, messages: [] })) as RawResult);
      },
      callAnyName: (name) => client.callTool({ name, arguments: {} }),
      close: () => client.close(),
    };
  },
};

/** A LangChain tool as getTools() builds it; invoked with a tool call, as an agent's tool node does. */
type LangChainTool = {
  name: string;
  invoke(call: { type: 'tool_call'; id: string; name: string; args: Record<string, unknown> }): Promise<unknown>;
};

const langChain: Host = {
  name: '@langchain/mcp-adapters 1.1',
  // Its tools send name and arguments only (beforeToolCall may change headers and args, not _meta).
  sendsApprovalId: false,
  // A result's text reaches the model; an isError result is thrown as a ToolException carrying the text.
  showsMeta: false,
  async open(id, token, at = base) {
    const client = new MultiServerMCPClient({
      mcpServers: { orchestrator: { transport: 'http', url: mcpUrl(id, at).href, headers: auth(token) } },
      useStandardContentBlocks: false,
    });
    const tools = (await client.getTools()) as unknown as LangChainTool[];
    let calls = 0;
    return {
      listed: tools.map((x) => x.name),
      call: async (name, args) => {
        const tool = tools.find((x) => x.name === name);
        if (!tool) throw new Error(`${name} is not one of the listed tools`);
        try {
          const message = (await tool.invoke({ type: 'tool_call', id: `call-${++calls}`, name, args })) as {
            content: unknown;
            artifact?: { type: string; data?: unknown }[];
          };
          const text = typeof message.content === 'string' ? message.content : textOf(message.content);
          const structured = message.artifact?.find((a) => a.type === 'mcp_structured_content')?.data;
          return { isError: false, text, ...(structured !== undefined ? { structured } : {}) };
        } catch (err) {
          // What an agent's tool node turns into the error message the model sees.
          if ((err as Error).name !== 'ToolException') throw err;
          return { isError: true, text: (err as Error).message };
        }
      },
      close: () => client.close(),
    };
  },
};

const HOSTS = [sdkV1, sdkV2, aiSdk, langChain];

/** A conversation of alice's and an agent key for it (what a host is given). */
async function conversation(extra: Record<string, unknown> = {}): Promise<{ id: string; agent: MintedKey }> {
  const id = uniqueId('mcp-host');
  await createConversation(base, alice.token, id);
  return { id, agent: await mintAgentKey(base, alice.token, id, extra) };
}

/** The refusal a host saw: isError, its code in the text and (where the host shows it) in _meta, no structuredContent. */
function expectRefusal(host: Host, seen: Seen, code: string): void {
  expect([seen.isError, seen.structured]).toEqual([true, undefined]);
  expect(seen.text).toContain(`[code: ${code}]`);
  if (host.showsMeta) expect(seen.meta).toEqual(expect.objectContaining({ success: false, code }));
}

/** The approval id a permission_required refusal names, from its text (every host shows it), and _meta where shown. */
function approvalIdOf(host: Host, seen: Seen): string {
  expectRefusal(host, seen, 'permission_required');
  const id = /Approval id: ([A-Za-z0-9:_-]+) /.exec(seen.text)?.[1];
  expect(id).toBeDefined();
  if (host.showsMeta) expect(seen.meta).toEqual(expect.objectContaining({ approval: expect.objectContaining({ id }) }));
  return id!;
}

async function approve(id: string, approvalId: string, scope: 'once' | 'conversation'): Promise<void> {
  await request(base, alice.token)
    .post(`/conversations/${id}/approvals/${approvalId}/approve`)
    .send({ scope })
    .expect(200);
}

describe.each(HOSTS.map((h) => [h.name, h] as const))('%s', (_name, host) => {
  let open: HostSession[] = [];
  async function start(id: string, token: string, at = base): Promise<HostSession> {
    const session = await host.open(id, token, at);
    open.push(session);
    return session;
  }
  afterEach(async () => {
    for (const s of open) await s.close();
    open = [];
  });

  it('lists the tools first, then calls one: the output as text, and as structuredContent conforming to its schema', async () => {
    const { id, agent } = await conversation();
    const session = await start(id, agent.token);
    expect(session.listed).toEqual(expect.arrayContaining(['calculator_add', 'data-tool_read-resource']));
    const sum = await session.call('calculator_add', { a: 2, b: 3 });
    expect([sum.isError, sum.structured]).toEqual([false, { result: 5 }]);
    expect(sum.text).toContain(JSON.stringify({ result: 5 }));

    await request(base, alice.token)
      .put(`/conversations/${id}/resources/notes`)
      .send({ data: { n: 1 } })
      .expect(201);
    const read = await session.call('data-tool_read-resource', { name: 'notes' });
    expect(read.isError).toBe(false);
    expect(read.structured).toEqual(expect.objectContaining({ name: 'notes', data: { n: 1 } }));
  });

  it('every refusal reaches the model with its code: resource_not_found, invalid_args, resource_exists, resource_too_large, tool_error', async () => {
    const { id, agent } = await conversation();
    // The owner lets data-tool write, so the write refusals past the permission check are reachable.
    await request(base, alice.token).put(`/conversations/${id}/permissions/data-tool`).send({ level: 2 }).expect(200);
    const session = await start(id, agent.token);

    // The reproduction: a missing resource read after the tools were listed.
    const missing = await session.call('data-tool_read-resource', { name: 'nothing-here' });
    expectRefusal(host, missing, 'resource_not_found');
    expect(missing.text).toContain('nothing-here');

    const created = await session.call('data-tool_create-resource', { name: 'dup', data: 1 });
    expect(created.isError).toBe(false);
    expectRefusal(host, await session.call('data-tool_create-resource', { name: 'dup', data: 2 }), 'resource_exists');
    expectRefusal(
      host,
      await session.call('data-tool_create-resource', { name: 'big', data: 'x'.repeat(2000) }),
      'resource_too_large',
    );
    expectRefusal(host, await session.call('failing-tool_throw-error', {}), 'tool_error');
    const broken = await session.call('failing-tool_break-schema', {});
    expectRefusal(host, broken, 'tool_error');
    expect(broken.text).toContain('does not match its outputSchema');

    // Args the tool refuses that pass the listed inputSchema (LangChain checks args against it before sending).
    const invalid = await session.call('calculator_add', { a: 1e308, b: 1e308 });
    expectRefusal(host, invalid, 'invalid_args');
    expect(invalid.text).toContain('too large');

    // Nothing was written by a refusal.
    const listing = await request(base, alice.token).get(`/conversations/${id}/resources`).expect(200);
    expect((listing.body.resources as { name: string }[]).map((r) => r.name)).toEqual(['dup']);
  });

  it('permission_required names the approval (text, and _meta where shown); approved for the conversation, the same call runs', async () => {
    const { id, agent } = await conversation();
    const session = await start(id, agent.token);
    const args = { name: 'notes', data: { items: [1, 2] } };
    const refused = await session.call('data-tool_create-resource', args);
    const approvalId = approvalIdOf(host, refused);
    expect(refused.text).toContain('Permission upgrade required');
    const pending = await request(base, alice.token).get(`/conversations/${id}/approvals/${approvalId}`).expect(200);
    expect(pending.body).toEqual(expect.objectContaining({ status: 'pending', tool: 'data-tool', args }));

    // The retry every host can make: the owner raises the level for the conversation, the call is made again.
    await approve(id, approvalId, 'conversation');
    const ran = await session.call('data-tool_create-resource', args);
    expect(ran.isError).toBe(false);
    expect(ran.structured).toEqual(expect.objectContaining({ resource: expect.objectContaining({ name: 'notes' }) }));
    await request(base, alice.token).get(`/conversations/${id}/resources/notes`).expect(200);
  });

  it('denied: a policy that changed after the host listed its tools', async () => {
    const id = uniqueId('mcp-host-policy');
    await createConversation(base, alice.token, id);
    const session = await start(id, alice.token);
    expect(session.listed).toContain('calculator_add');
    // The conversation is made again with a policy (a policy is set when a conversation is created).
    await request(base, alice.token).delete(`/conversations/${id}`).expect(204);
    await request(base, alice.token)
      .post('/conversations')
      .send({ id, policy: { deny: ['calculator/*'] } })
      .expect(201);
    const seen = await session.call('calculator_add', { a: 1, b: 2 });
    expectRefusal(host, seen, 'denied');
    if (host.showsMeta) expect(seen.meta).toEqual(expect.objectContaining({ alignment: 'contradiction' }));
  });

  if (host.sendsApprovalId) {
    it('retries under _meta.approvalId: runs once, then approval_used; approval_mismatch, approval_not_found, approval_rejected', async () => {
      const { id, agent } = await conversation();
      const session = await start(id, agent.token);
      const args = { name: 'once', data: 1 };
      const approvalId = approvalIdOf(host, await session.call('data-tool_create-resource', args));
      // Still pending: the same refusal, the same approval.
      expect(approvalIdOf(host, await session.call('data-tool_create-resource', args, approvalId))).toBe(approvalId);
      await approve(id, approvalId, 'once');
      expectRefusal(
        host,
        await session.call('data-tool_create-resource', { name: 'other', data: 1 }, approvalId),
        'approval_mismatch',
      );
      const ran = await session.call('data-tool_create-resource', args, approvalId);
      expect(ran.isError).toBe(false);
      expect(ran.structured).toEqual(expect.objectContaining({ message: 'Resource created by data-tool' }));
      expectRefusal(host, await session.call('data-tool_create-resource', args, approvalId), 'approval_used');
      expectRefusal(host, await session.call('calculator_add', { a: 1, b: 1 }, 'apr_no_such'), 'approval_not_found');

      const second = approvalIdOf(host, await session.call('data-tool_create-resource', { name: 'no', data: 1 }));
      await request(base, alice.token)
        .post(`/conversations/${id}/approvals/${second}/reject`)
        .send({ reason: 'not now' })
        .expect(200);
      const rejected = await session.call('data-tool_create-resource', { name: 'no', data: 1 }, second);
      expectRefusal(host, rejected, 'approval_rejected');
      expect(rejected.text).toContain('not now');
    });

    it('approval_expired: a retry under an approval request that lapsed', async () => {
      const { id, agent } = await conversation();
      const session = await start(id, agent.token, shortTtlBase);
      const args = { name: 'late', data: 1 };
      const approvalId = approvalIdOf(host, await session.call('data-tool_create-resource', args));
      const { expiresAt } = (
        await request(base, alice.token).get(`/conversations/${id}/approvals/${approvalId}`).expect(200)
      ).body as { expiresAt: number };
      await waitFor('the approval request to lapse', () => Date.now() > expiresAt);
      expectRefusal(host, await session.call('data-tool_create-resource', args, approvalId), 'approval_expired');
    });

    it('level_ceiling: an agent key over its maxLevel (the action is not listed for it; calling it is refused)', async () => {
      const { id, agent } = await conversation({ maxLevel: 1 });
      const session = await start(id, agent.token);
      expect(session.listed).toContain('calculator_add');
      expect(session.listed).not.toContain('data-tool_create-resource');
      const seen = await session.call('data-tool_create-resource', { name: 'n', data: 1 });
      expectRefusal(host, seen, 'level_ceiling');
      await request(base, alice.token).get(`/conversations/${id}/resources/n`).expect(404);
    });
  }

  if (host.name !== langChain.name) {
    it('an unknown tool is the JSON-RPC error -32602 naming the whole name', async () => {
      const { id, agent } = await conversation();
      const session = await start(id, agent.token);
      for (const name of ['nope_nope', 'calculator_nope']) {
        const err = await session.callAnyName!(name).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(Error);
        expect((err as Error).message).toContain(`Unknown tool: ${name}`);
        // The SDK clients keep the code; the AI SDK's MCPClientError has it too.
        expect((err as { code?: unknown }).code).toBe(-32602);
        if (host === sdkV1) expect(err).toBeInstanceOf(McpError);
      }
    });
  }
});
