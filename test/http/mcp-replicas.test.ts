/**
 * Two replicas of the service on one database, as behind a round-robin
 * balancer (API.md, "LLM and MCP interop": any replica answers any request,
 * no sticky sessions): the official clients of both eras with their requests
 * alternating between the replicas, and a tool file added to one replica's
 * TOOLS_DIR while clients listen on the other (the event reaches them through
 * Postgres LISTEN/NOTIFY; on the embedded database, in process).
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { bearer } from '../support/auth';
import { closeMcpSessions, mcpRouterOf } from '../../src/mcp/conversation-mcp';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';
import { shoutToolModule } from '../support/fixtures';

interface Replica {
  app: TestApp;
  server: HttpServer;
  base: string;
  toolsDir: ScratchDir;
}

let replicas: Replica[] = [];
const closers: Array<() => Promise<void>> = [];

async function start(name: string, replicaOf?: TestApp): Promise<Replica> {
  const toolsDir = scratchDir(`mcp-replica-${name}`);
  const app = await createTestApp(
    { TOOLS_DIR: toolsDir.path, TOOLS_HOT_RELOAD: 'true' },
    replicaOf ? { replicaOf } : {},
  );
  const server = app.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return { app, server, toolsDir, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  const a = await start('a');
  const b = await start('b', a.app);
  replicas = [a, b];
});

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

afterAll(async () => {
  // The replica first: the database belongs to the first app.
  for (const r of [...replicas].reverse()) {
    await closeMcpSessions(r.app.services);
    await new Promise<void>((resolve) => {
      r.server.close(() => resolve());
      r.server.closeAllConnections();
    });
    await r.app.close();
    r.toolsDir.remove();
  }
});

/** A fetch that sends each request to the next replica in turn, and counts where each went. */
function roundRobin(): { fetch: typeof fetch; served: number[]; methods: string[][] } {
  let next = 0;
  const served = replicas.map(() => 0);
  const methods: string[][] = replicas.map(() => []);
  const rr = (async (input: string | URL | Request, init?: RequestInit) => {
    const i = next++ % replicas.length;
    served[i]!++;
    const url = new URL(input instanceof Request ? input.url : input.toString());
    const target = new URL(url.pathname + url.search, replicas[i]!.base);
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : undefined;
    methods[i]!.push(`${init?.method ?? 'GET'} ${body?.method ?? ''}`.trim());
    return fetch(target, init);
  }) as typeof fetch;
  return { fetch: rr, served, methods };
}

const url = (conversationId: string, at = replicas[0]!.base): URL =>
  new URL(`${at}/conversations/${conversationId}/mcp`);

describe('requests alternating between two replicas', () => {
  it('a 2025-11-25 client (SDK v1) initializes on one replica and carries on with the other', async () => {
    const id = uniqueId('mcp-rr-2025');
    const rr = roundRobin();
    const client = new ClientV1({ name: 'rr-2025', version: '1.0.0' });
    // No GET stream here: it would take turns too, and it is checked below on its own.
    const transport = new TransportV1(url(id), { requestInit: { headers: bearer() }, fetch: rr.fetch });
    await client.connect(transport);
    closers.push(() => client.close());
    for (let i = 0; i < 4; i++) {
      const sum = (await client.callTool({ name: 'calculator_add', arguments: { a: i, b: 1 } })) as CallToolResult;
      expect(sum.structuredContent).toEqual({ result: i + 1 });
    }
    for (let i = 0; i < 2; i++) {
      expect((await client.listTools()).tools.map((x) => x.name)).toContain('calculator_add');
    }
    expect(rr.served.every((n) => n >= 3)).toBe(true);
    // initialize went to one replica, the calls after it to both.
    expect(rr.methods.flat()).toContain('POST initialize');
    expect(rr.methods.every((m) => m.includes('POST tools/call') && m.includes('POST tools/list'))).toBe(true);
  });

  it('a 2026-07-28 client (SDK v2) discovers on one replica and calls on both', async () => {
    const id = uniqueId('mcp-rr-2026');
    const rr = roundRobin();
    const client = new Client(
      { name: 'rr-2026', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(url(id), { requestInit: { headers: bearer() }, fetch: rr.fetch }),
    );
    closers.push(() => client.close());
    for (let i = 0; i < 4; i++) {
      const sum = await client.callTool({ name: 'calculator_add', arguments: { a: i, b: 2 } });
      expect(sum.structuredContent).toEqual({ result: i + 2 });
    }
    for (let i = 0; i < 2; i++) {
      expect((await client.listTools()).tools.map((x) => x.name)).toContain('calculator_add');
    }
    // (tools/list once: the client keeps the result for its ttlMs.)
    expect(rr.methods.every((m) => m.includes('POST tools/call'))).toBe(true);
    expect(rr.methods.flat()).toContain('POST tools/list');
  });
});

describe('a tool-set change on one replica', () => {
  it('reaches a 2026 listener and a 2025 GET stream held by the other replica', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const id = uniqueId('mcp-cross');

    const modern = new Client(
      { name: 'listener-2026', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await modern.connect(new StreamableHTTPClientTransport(url(id, a.base), { requestInit: { headers: bearer() } }));
    closers.push(() => modern.close());
    const modernNotified = new Promise<void>((resolve) =>
      modern.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
    );
    const subscription = await modern.listen({ toolsListChanged: true });
    closers.push(() => subscription.close());

    let getOpened!: () => void;
    const getOpen = new Promise<void>((resolve) => (getOpened = resolve));
    const legacy = new ClientV1({ name: 'listener-2025', version: '1.0.0' });
    await legacy.connect(
      new TransportV1(url(id, a.base), {
        requestInit: { headers: bearer() },
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if ((init?.method ?? 'GET') === 'GET' && res.ok) getOpened();
          return res;
        },
      }),
    );
    closers.push(() => legacy.close());
    const legacyNotified = new Promise<void>((resolve) =>
      legacy.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    await getOpen;
    // Replica A's LISTEN is in place (it opened with the first stream).
    await mcpRouterOf(a.app.services)!.bus.ready();

    b.toolsDir.write('cross-replica.js', shoutToolModule('cross-replica', 'Added on replica B'));
    await Promise.all([modernNotified, legacyNotified]);

    // B has the tool; a client sent there lists it.
    await b.app.registry.reload();
    const onB = new Client({ name: 'on-b', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await onB.connect(new StreamableHTTPClientTransport(url(id, b.base), { requestInit: { headers: bearer() } }));
    closers.push(() => onB.close());
    expect((await onB.listTools()).tools.map((x) => x.name)).toContain('cross-replica_shout-text');
  });
});
