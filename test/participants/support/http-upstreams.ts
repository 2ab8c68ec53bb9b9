/**
 * HTTP upstreams written for the participant tests, each on a port of its
 * own (port 0), stopped after:
 * - a 2026-07-28 server on the SDK v2 (createMcpHandler, as src/mcp serves),
 *   whose tool list can change;
 * - a 2025-era sessionful server on the SDK v1 that can forget its sessions
 *   (404 on a session id it does not know, as a restarted server answers);
 * - a raw HTTP server answering whatever a test says (garbage, echoes).
 * Every server records the headers of the requests it got.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { Server as V1Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface HttpUpstream {
  url: string;
  /** Headers of every request received, in order. */
  requests: Array<{ method: string; headers: IncomingHttpHeaders; body?: unknown }>;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

function closer(server: Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return text;
  }
}

export interface ModernUpstream extends HttpUpstream {
  /** Adds a tool and announces notifications/tools/list_changed. */
  addTool(): void;
  /** Requests of `slow` whose signal was aborted (the client cancelled). */
  cancelled(): number;
}

/** A 2026-07-28 server (SDK v2's serving entry; 2025-era clients get its stateless legacy leg). */
export async function startModernServer(): Promise<ModernUpstream> {
  let extra = false;
  let cancelled = 0;
  const factory = (): McpServer => {
    const server = new McpServer(
      { name: 'modern', version: '2.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.registerTool(
      'add',
      {
        title: 'Add',
        description: 'Adds two numbers',
        inputSchema: z.object({ a: z.number(), b: z.number() }),
        outputSchema: z.object({ sum: z.number() }),
        annotations: { readOnlyHint: true },
      },
      ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }),
    );
    server.registerTool('slow', { description: 'Never ends', inputSchema: z.object({}) }, (_args, ctx) => {
      return new Promise((resolve) => {
        ctx.mcpReq.signal.addEventListener('abort', () => {
          cancelled += 1;
          resolve({ content: [{ type: 'text', text: 'cancelled' }] });
        });
      });
    });
    if (extra)
      server.registerTool('extra', { description: 'Added later', inputSchema: z.object({}) }, () => ({ content: [] }));
    return server;
  };
  const handler = createMcpHandler(factory);
  const node = toNodeHandler(handler);
  const requests: HttpUpstream['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', headers: req.headers });
    void node(req, res);
  });
  const url = await listen(server);
  const close = closer(server);
  return {
    url,
    requests,
    addTool() {
      extra = true;
      handler.notify.toolsChanged();
    },
    cancelled: () => cancelled,
    close: async () => {
      await handler.close();
      await close();
    },
  };
}

export interface LegacyUpstream extends HttpUpstream {
  /** Forgets every session, as a restarted server does. */
  forgetSessions(): void;
  initializeCount(): number;
}

/** A sessionful 2025-era server on the SDK v1, answering 404 to a session id it does not know. */
export async function startLegacySessionServer(): Promise<LegacyUpstream> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let initializes = 0;
  const requests: HttpUpstream['requests'] = [];
  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const server = new V1Server({ name: 'legacy', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: 'echo',
          description: 'Echoes',
          inputSchema: { type: 'object', properties: { message: { type: 'string' } } },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) => ({
      content: [{ type: 'text', text: `Echo: ${String(request.params.arguments?.message)}` }],
    }));
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    await server.connect(transport);
    return transport;
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    requests.push({ method: req.method ?? '', headers: req.headers, body });
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const transport = sessions.get(id);
      if (!transport) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    if ((body as { method?: string } | undefined)?.method === 'initialize') initializes += 1;
    await (await newSession()).handleRequest(req, res, body);
  };
  const server = createServer((req, res) => void handle(req, res));
  const url = await listen(server);
  return {
    url,
    requests,
    forgetSessions: () => sessions.clear(),
    initializeCount: () => initializes,
    close: closer(server),
  };
}

/** An answer; `reset` destroys the connection, `hold` never answers (until the server closes). */
export type RawAnswer = Reply | 'reset' | 'hold';
type Reply = { status: number; contentType?: string; body: string };

/**
 * A raw HTTP server answering each JSON-RPC message as `answer` says; by default a minimal
 * 2025-era server (initialize, notifications, tools/list). `answer` returning undefined keeps the default.
 */
export async function startRawServer(
  answer: (
    message: { id?: unknown; method?: string; params?: Record<string, unknown> },
    headers: IncomingHttpHeaders,
  ) => RawAnswer | undefined,
): Promise<HttpUpstream> {
  const requests: HttpUpstream['requests'] = [];
  const json = (id: unknown, result: unknown): Reply => ({
    status: 200,
    contentType: 'application/json',
    body: JSON.stringify({ jsonrpc: '2.0', id, result }),
  });
  const fallback = (m: { id?: unknown; method?: string; params?: Record<string, unknown> }): Reply => {
    if (m.id === undefined) return { status: 202, body: '' };
    if (m.method === 'initialize') {
      return json(m.id, {
        protocolVersion: m.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'raw', version: '1.0.0' },
      });
    }
    if (m.method === 'tools/list') return json(m.id, { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] });
    return {
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } }),
    };
  };
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      requests.push({ method: req.method ?? '', headers: req.headers, body });
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const message = (body ?? {}) as { id?: unknown; method?: string; params?: Record<string, unknown> };
      const a = answer(message, req.headers) ?? fallback(message);
      if (a === 'reset') {
        req.socket.destroy();
        return;
      }
      if (a === 'hold') return;
      res.writeHead(a.status, a.contentType ? { 'content-type': a.contentType } : {});
      res.end(a.body);
    });
  });
  const url = await listen(server);
  return { url, requests, close: closer(server) };
}
