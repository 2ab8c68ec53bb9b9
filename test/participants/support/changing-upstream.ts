/**
 * A small MCP server (the official SDK's McpServer over Streamable HTTP, with
 * sessions) whose tools change while it runs: the pinning tests change a
 * tool's description, add a tool and remove one, and each change is sent to
 * every connected session as notifications/tools/list_changed, as a real
 * server does when its tools change.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

interface ToolSpec {
  description: string;
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  registered: Map<string, RegisteredTool>;
}

export interface ChangingUpstream {
  url: string;
  /**
   * Changes (or adds) a tool on every session, which are told tools/list_changed; `silently`: they are
   * not told (as a server that never notifies), so only a listing finds the change.
   */
  setTool(name: string, description: string, options?: { silently?: boolean }): void;
  removeTool(name: string): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      try {
        resolve(text === '' ? undefined : JSON.parse(text));
      } catch {
        reject(new Error('the request body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

function register(session: Session, name: string, spec: ToolSpec): void {
  const tool = session.server.registerTool(
    name,
    { description: spec.description, inputSchema: { who: z.string() }, annotations: { readOnlyHint: true } },
    ({ who }) => ({ content: [{ type: 'text', text: `${name}: hello ${who}` }] }),
  );
  session.registered.set(name, tool);
}

export async function startChangingUpstream(initial: Record<string, string>): Promise<ChangingUpstream> {
  const tools = new Map<string, ToolSpec>(Object.entries(initial).map(([n, d]) => [n, { description: d }]));
  const sessions = new Map<string, Session>();

  const newSession = (): Session => {
    const server = new McpServer(
      { name: 'changing-upstream', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    const session: Session = {
      server,
      registered: new Map(),
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, session),
      }),
    };
    for (const [name, spec] of tools) register(session, name, spec);
    return session;
  };

  const http: Server = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      const id = req.headers['mcp-session-id'];
      let session = typeof id === 'string' ? sessions.get(id) : undefined;
      if (!session) {
        if (typeof id === 'string') {
          res.writeHead(404).end();
          return;
        }
        session = newSession();
        await session.server.connect(session.transport);
      }
      await session.transport.handleRequest(req, res, body);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    setTool(name, description, options = {}) {
      tools.set(name, { description });
      for (const s of sessions.values()) {
        const notify = s.server.sendToolListChanged.bind(s.server);
        if (options.silently) s.server.sendToolListChanged = () => undefined;
        const existing = s.registered.get(name);
        if (existing) existing.update({ description });
        else register(s, name, { description });
        s.server.sendToolListChanged = notify;
      }
    },
    removeTool(name) {
      tools.delete(name);
      for (const s of sessions.values()) {
        s.registered.get(name)?.remove();
        s.registered.delete(name);
      }
    },
    async close() {
      for (const s of sessions.values()) await s.server.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
