/**
 * The direct tools/call of mcp-http (mcp-direct-call.ts): sent without the
 * SDK client on an established connection, with the same outcome as the SDK
 * client's. Every case runs both ways (`directCalls` on and off) against the
 * same upstream and expects the same answer; the direct way is seen on the
 * wire (its JSON-RPC ids are `direct-N` strings, the SDK client's numbers).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';
import { createGuardedFetch, type GuardedFetch } from '../../src/participants/address-rules';
import { createMcpHttpConnector } from '../../src/participants/mcp-upstream';
import { makeConnector } from '../../src/participants/participant-connectors';
import type { ParticipantRecord } from '../../src/participants/participant-records';
import { UpstreamTimeoutError, UpstreamUnavailableError } from '../../src/participants/upstream';
import { waitFor } from '../support/poll';
import { startLegacySessionServer } from './support/http-upstreams';
import { memoryLogger } from './support/upstreams';

jest.setTimeout(60_000);

const SECRET = 'Bearer direct-secret-marker-5c1f0b';
const opts = { signal: new AbortController().signal, timeoutMs: 10_000 };
const ways: Array<[string, boolean]> = [
  ['direct', true],
  ['through the SDK client', false],
];

type Rpc = { jsonrpc?: string; id?: unknown; method?: string; params?: Record<string, unknown> };
type Handler = (m: Rpc, headers: IncomingHttpHeaders, res: ServerResponse) => boolean;
interface Scripted {
  url: string;
  server: Server;
  requests: Array<{ headers: IncomingHttpHeaders; body: Rpc }>;
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** A 2025-era upstream whose tools/call answers are the test's (`handle` returns false: the default). */
async function scripted(handle: Handler): Promise<Scripted> {
  const requests: Scripted['requests'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Rpc;
      requests.push({ headers: req.headers, body });
      if (handle(body, req.headers, res)) return;
      if (body.method === 'server/discover')
        return sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'not initialized' } });
      if (body.id === undefined) return void res.writeHead(202).end();
      const reply = (result: unknown) => sendJson(res, 200, { jsonrpc: '2.0', id: body.id, result });
      if (body.method === 'initialize') {
        return reply({
          protocolVersion: body.params?.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'scripted', version: '1' },
        });
      }
      if (body.method === 'tools/list') {
        const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });
        return reply({
          tools: [
            'echo',
            'slow',
            'html',
            'notrpc',
            'badsse',
            'cut',
            'ended',
            'reset',
            'http500',
            'http400',
            'rpc',
            'away',
          ].map(tool),
        });
      }
      sendJson(res, 200, { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return {
    url,
    server,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const echoText = (headers: IncomingHttpHeaders) => `you sent authorization=${String(headers.authorization)}`;

/** The tools/call answers of the scripted upstream, by tool name. */
const calls: Handler = (m, headers, res) => {
  if (m.method !== 'tools/call') return false;
  const id = m.id;
  const frame = (message: unknown) => `event: message\r\ndata: ${JSON.stringify(message)}\r\n\r\n`;
  switch (m.params?.name) {
    case 'echo': {
      // SSE, as SDK 1.x servers answer: a comment, a notification, then the response split over two data lines.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': keep-alive\n\n');
      res.write(frame({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }));
      const text = `${echoText(headers)} ${JSON.stringify(m.params?.arguments)}`;
      const json = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
      const cut = json.indexOf('"id"');
      res.end(`data: ${json.slice(0, cut)}\ndata:${json.slice(cut)}\n\n`);
      return true;
    }
    case 'slow':
      return true; // never answers
    case 'html':
      sendJson(res, 200, '<p>not MCP</p>', 'text/html');
      return true;
    case 'notrpc':
      sendJson(res, 200, { hello: 'world' });
      return true;
    case 'badsse':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"jsonrpc": oops\n\n');
      return true;
    case 'cut':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame({ jsonrpc: '2.0', method: 'notifications/progress', params: {} }), () => res.destroy());
      return true;
    case 'ended':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(frame({ jsonrpc: '2.0', method: 'notifications/progress', params: {} }));
      return true;
    case 'reset':
      res.socket?.destroy();
      return true;
    case 'http500':
      sendJson(res, 500, echoText(headers), 'text/plain');
      return true;
    case 'http400':
      sendJson(res, 400, echoText(headers), 'text/plain');
      return true;
    case 'rpc':
      sendJson(res, 200, { jsonrpc: '2.0', id, error: { code: -32602, message: echoText(headers) } });
      return true;
    case 'away':
      res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      return true;
    default:
      return false;
  }
};

async function outcomeOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (r) => r,
    (e: unknown) => e,
  );
}

const directIds = (s: { requests: Array<{ body: Rpc }> }) =>
  s.requests.filter((r) => r.body.method === 'tools/call' && String(r.body.id).startsWith('direct-')).length;

describe.each(ways)('a 2025-era upstream, %s', (_way, directCalls) => {
  let upstream: Scripted;
  let guarded: GuardedFetch;
  const logger = memoryLogger();
  let connector: ReturnType<typeof createMcpHttpConnector>;
  beforeAll(async () => {
    upstream = await scripted(calls);
    guarded = createGuardedFetch({ allowedHosts: [] });
    connector = createMcpHttpConnector({
      participant: 'scripted',
      url: upstream.url,
      headers: { Authorization: SECRET },
      fetch: guarded,
      logger,
      directCalls,
    });
    await connector.listTools();
  });
  afterAll(async () => {
    await connector.close();
    await guarded.close();
    await upstream.close();
  });

  const call = (tool: string, timeoutMs = 10_000) =>
    outcomeOf(connector.call(tool, { message: 'hi' }, { ...opts, timeoutMs }));

  it('reads an SSE answer past a notification, the secret redacted, on the wire as the way says', async () => {
    const before = directIds(upstream);
    expect(await call('echo')).toEqual({
      output: { content: [{ type: 'text', text: 'you sent authorization=[redacted] {"message":"hi"}' }] },
      isError: false,
    });
    expect(directIds(upstream) - before).toBe(directCalls ? 1 : 0);
    const sent = upstream.requests.at(-1)!;
    expect(sent.headers).toMatchObject({ authorization: SECRET, 'mcp-protocol-version': '2025-11-25' });
    expect(sent.headers.accept).toContain('text/event-stream');
  });

  it.each([
    ['html', 'answered with something that is not MCP'],
    ['notrpc', directCalls ? 'answered with something that is not MCP' : 'not reachable'],
    ['reset', 'connection reset'],
    ['http500', 'answered HTTP 500'],
  ])('%s: unavailable, %s', async (tool, reason) => {
    const error = await call(tool);
    expect(error).toBeInstanceOf(UpstreamUnavailableError);
    expect((error as Error).message).toBe(`Participant scripted is unavailable: ${reason}`);
    expect((error as Error).cause).toBeUndefined();
    expect(String((error as Error).stack)).not.toContain('direct-secret-marker');
  });

  // The SDK client reports these outside the request and waits for its timeout; the direct way fails at once.
  it.each([
    ['badsse', 'answered with something that is not MCP'],
    ['cut', 'connection reset'],
    ['ended', 'connection closed'],
  ])('%s (an SSE event that is not JSON, a stream cut or ended before the answer): %s', async (tool, reason) => {
    const error = await call(tool, 1500);
    if (!directCalls) return expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect(error).toBeInstanceOf(UpstreamUnavailableError);
    expect((error as Error).message).toBe(`Participant scripted is unavailable: ${reason}`);
  });

  it('a JSON-RPC error and an HTTP 400 are error results, redacted', async () => {
    expect(await call('rpc')).toEqual({
      output: { content: [] },
      isError: true,
      errorMessage:
        "Participant scripted's tool rpc rejected the arguments (JSON-RPC -32602): you sent authorization=[redacted]",
    });
    expect(await call('http400')).toMatchObject({
      isError: true,
      errorMessage: "Participant scripted's tool http400 was refused upstream (HTTP 400)",
    });
    expect(logger.text()).not.toContain('direct-secret-marker');
  });

  it("a call with an owner's headers sends those, on that header set's own session", async () => {
    const owner = 'Bearer owner-secret-marker-0e3d';
    const result = await connector.call('echo', { message: 'hi' }, { ...opts, headers: { Authorization: owner } });
    expect(result.output).toEqual({
      content: [{ type: 'text', text: 'you sent authorization=[redacted] {"message":"hi"}' }],
    });
    const sent = upstream.requests.at(-1)!;
    expect(sent.headers.authorization).toBe(owner);
    expect(typeof sent.body.id).toBe(directCalls ? 'string' : 'number');
  });

  it('a redirect is left to the guarded fetch, which refuses one towards a metadata address', async () => {
    const refused = await call('away');
    expect(refused).toBeInstanceOf(UpstreamUnavailableError);
    expect((refused as Error).message).toMatch(/address refused: 169\.254\.169\.254/);
  });

  it('a timeout cancels the call upstream (notifications/cancelled for its id)', async () => {
    const error = await call('slow', 300);
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    const sent = upstream.requests
      .filter((r) => r.body.method === 'tools/call' && r.body.params?.name === 'slow')
      .at(-1)!;
    await waitFor('notifications/cancelled for the call', () =>
      upstream.requests.some(
        (r) => r.body.method === 'notifications/cancelled' && r.body.params?.requestId === sent.body.id,
      ),
    );
    expect(typeof sent.body.id).toBe(directCalls ? 'string' : 'number');
  });

  it('an abort by the caller cancels too', async () => {
    const stop = new AbortController();
    const pending = outcomeOf(connector.call('slow', {}, { signal: stop.signal, timeoutMs: 10_000 }));
    await waitFor(
      'the call reached the upstream',
      () => upstream.requests.filter((r) => r.body.params?.name === 'slow').length >= 2,
    );
    stop.abort();
    expect(await pending).toBeInstanceOf(UpstreamTimeoutError);
  });
});

describe.each(ways)('a name that comes to resolve to a metadata address, %s', (_way, directCalls) => {
  it('is refused when the next connection is made, before anything is sent', async () => {
    const upstream = await scripted(calls);
    let address = '127.0.0.1';
    const guarded = createGuardedFetch({ allowedHosts: [], lookup: () => Promise.resolve([{ address, family: 4 }]) });
    const port = new URL(upstream.url).port;
    const connector = createMcpHttpConnector({
      participant: 'renamed',
      url: `http://upstream.test:${port}/mcp`,
      fetch: guarded,
      logger: memoryLogger(),
      directCalls,
    });
    try {
      await connector.listTools();
      expect(await connector.call('echo', {}, opts)).toMatchObject({ isError: false });
      address = '169.254.169.254';
      upstream.server.closeIdleConnections();
      // The pool's stats are a snapshot each time they are read.
      const pool = guarded.dispatcher as unknown as { stats: Record<string, { connected: number } | undefined> };
      await waitFor(
        'the pool saw its connections closed',
        () => !pool.stats[`http://upstream.test:${port}`]?.connected,
      );
      const sent = upstream.requests.length;
      const error = await outcomeOf(connector.call('echo', {}, opts));
      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect((error as Error).message).toMatch(/address refused: upstream\.test resolves to a link-local/);
      expect(upstream.requests.length).toBe(sent);
    } finally {
      await connector.close();
      await guarded.close();
      await upstream.close();
    }
  });
});

describe.each(ways)('a sessionful 2025-era upstream (SDK 1.x), %s', (_way, directCalls) => {
  it('sends its session id, and initialises again once when the upstream forgot the session', async () => {
    const upstream = await startLegacySessionServer();
    const connector = createMcpHttpConnector({
      participant: 'legacy',
      url: upstream.url,
      logger: memoryLogger(),
      directCalls,
    });
    try {
      await connector.listTools();
      const echo = { output: { content: [{ type: 'text', text: 'Echo: hi' }] }, isError: false };
      expect(await connector.call('echo', { message: 'hi' }, opts)).toEqual(echo);
      const first = upstream.requests.at(-1)!;
      expect(first.headers['mcp-session-id']).toEqual(expect.any(String));
      expect(typeof (first.body as Rpc).id).toBe(directCalls ? 'string' : 'number');
      upstream.forgetSessions();
      expect(await connector.call('echo', { message: 'hi' }, opts)).toEqual(echo);
      expect(upstream.initializeCount()).toBe(2);
      const last = upstream.requests.at(-1)!;
      expect(last.headers['mcp-session-id']).not.toBe(first.headers['mcp-session-id']);
      expect(typeof (last.body as Rpc).id).toBe(directCalls ? 'string' : 'number');
    } finally {
      await connector.close();
      await upstream.close();
    }
  });
});

/** A 2026-07-28 upstream on the SDK v2's serving entry: echo (direct), typed (an outputSchema: the SDK's), slow. */
async function startModern() {
  let cancelled = 0;
  const requests: Array<{ headers: IncomingHttpHeaders }> = [];
  const factory = () => {
    const server = new McpServer({ name: 'modern', version: '2.0.0' }, { capabilities: { tools: {} } });
    server.registerTool(
      'echo',
      { description: 'Echoes', inputSchema: z.object({ message: z.string() }) },
      ({ message }) => ({
        content: [{ type: 'text', text: `Echo: ${message}` }],
      }),
    );
    server.registerTool(
      'typed',
      { description: 'Typed', inputSchema: z.object({}), outputSchema: z.object({ n: z.number() }) },
      () => ({ content: [{ type: 'text', text: '1' }], structuredContent: { n: 1 } }),
    );
    server.registerTool('slow', { description: 'Never ends', inputSchema: z.object({}) }, (_a, ctx) => {
      return new Promise((resolve) => {
        ctx.mcpReq.signal.addEventListener('abort', () => {
          cancelled += 1;
          resolve({ content: [] });
        });
      });
    });
    return server;
  };
  const handler = createMcpHandler(factory);
  const node = toNodeHandler(handler);
  const server = createServer((req, res) => {
    requests.push({ headers: req.headers });
    void node(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    requests,
    cancelled: () => cancelled,
    close: async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe.each(ways)('a 2026-07-28 upstream, %s', (_way, directCalls) => {
  it('calls with the envelope and headers the SDK sends; an outputSchema tool goes through the SDK; a timeout cancels', async () => {
    const upstream = await startModern();
    const connector = createMcpHttpConnector({
      participant: 'modern',
      url: upstream.url,
      logger: memoryLogger(),
      directCalls,
    });
    try {
      await connector.listTools();
      expect(connector.info().protocolVersion).toBe('2026-07-28');
      expect(await connector.call('echo', { message: 'hi' }, opts)).toEqual({
        output: { content: [{ type: 'text', text: 'Echo: hi' }] },
        isError: false,
      });
      expect(upstream.requests.at(-1)!.headers).toMatchObject({
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'echo',
      });
      // fetch (the SDK client's) says sec-fetch-mode; undici's dispatcher API does not.
      expect(upstream.requests.at(-1)!.headers['sec-fetch-mode']).toBe(directCalls ? undefined : 'cors');
      expect(await connector.call('typed', {}, opts)).toEqual({
        output: { content: [{ type: 'text', text: '1' }], structuredContent: { n: 1 } },
        isError: false,
      });
      const before = upstream.cancelled();
      expect(await outcomeOf(connector.call('slow', {}, { ...opts, timeoutMs: 300 }))).toBeInstanceOf(
        UpstreamTimeoutError,
      );
      await waitFor('the upstream saw the cancellation', () => upstream.cancelled() > before, 10_000);
    } finally {
      await connector.close();
      await upstream.close();
    }
  });
});

describe("the service's mcp-http connector (makeConnector)", () => {
  it('calls directly on the guarded fetch the service passes, and through the SDK client on a fetch of its own', async () => {
    const upstream = await scripted(calls);
    const guarded = createGuardedFetch({ allowedHosts: [] });
    const record = { name: 'made', transport: 'mcp-http', config: { url: upstream.url } } as ParticipantRecord;
    const ownFetch: typeof fetch = (input, init) => fetch(input, init);
    try {
      for (const [fetchOf, expected] of [
        [guarded, 'string'],
        [ownFetch, 'number'],
      ] as const) {
        const connector = makeConnector(record, { headers: {}, env: {} }, { fetch: fetchOf, logger: memoryLogger() });
        try {
          await connector.listTools();
          expect(await connector.call('echo', {}, opts)).toMatchObject({ isError: false });
          expect(typeof upstream.requests.at(-1)!.body.id).toBe(expected);
        } finally {
          await connector.close();
        }
      }
    } finally {
      await guarded.close();
      await upstream.close();
    }
  });
});
