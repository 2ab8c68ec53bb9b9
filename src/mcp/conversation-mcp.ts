/**
 * `/conversations/{id}/mcp`: a Model Context Protocol server per conversation
 * over the Streamable HTTP transport (the official SDK's). Stateful: an
 * initialize request without a session opens one, bound to the conversation
 * in its URL; later requests carry `mcp-session-id`; DELETE ends it. GET opens
 * the SSE stream that carries `notifications/tools/list_changed` after a hot
 * reload. Sessions live in this process: several replicas behind a gateway
 * need sticky routing by `mcp-session-id`.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { Router, type Request, type Response } from 'express';
import { ID_RULE, isValidId } from '../core/resource-names';
import { sendProblem } from '../http/middleware';
import type { Services } from '../services';
import { createConversationServer } from './conversation-server';

export const MCP_PATH = '/conversations/:conversationId/mcp';

export interface McpRouterOptions {
  /** Open sessions at most; an initialize beyond it gets 503. Default 1000. */
  maxSessions?: number;
  /** A session without any request for this long is closed. Default 30 minutes. */
  idleTimeoutMs?: number;
}

export interface McpRouter extends Router {
  /** Closes every session (and its SSE streams); later requests get "session not found". */
  close(): Promise<void>;
  /** Open sessions (for tests and metrics). */
  readonly sessionCount: number;
}

interface Session {
  id: string;
  conversationId: string;
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
}

const DEFAULT_MAX_SESSIONS = 1000;
const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60 * 1000;

// Routers by the Services they were built for, so the entry file can close them knowing only `services`.
const routers = new WeakMap<Services, Set<McpRouter>>();

/** JSON-RPC error body, as the SDK's transport itself answers transport-level errors. */
function rpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

export function mcpRouter(services: Services, options: McpRouterOptions = {}): McpRouter {
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const log = services.logger.child({ component: 'mcp' });
  const registry = services.catalog.registry;
  const sessions = new Map<string, Session>();
  /** Transports between their initialize request and their session id (or failure). */
  const pending = new Set<StreamableHTTPServerTransport>();
  let closed = false;
  let sweeper: NodeJS.Timeout | undefined;

  // One registry listener for all sessions, attached while any session is open.
  const onToolsChanged = (): void => {
    for (const s of sessions.values()) {
      s.server.sendToolListChanged().catch((err: unknown) => {
        log.debug({ err, sessionId: s.id }, 'tools/list_changed not delivered');
      });
    }
  };

  function sweep(): void {
    const cutoff = Date.now() - idleTimeoutMs;
    for (const s of sessions.values()) {
      if (s.lastSeen < cutoff) {
        log.info({ sessionId: s.id, conversationId: s.conversationId }, 'MCP session idle; closing it');
        void closeSession(s);
      }
    }
  }

  function opened(s: Session): void {
    sessions.set(s.id, s);
    if (sessions.size === 1) {
      registry.on('change', onToolsChanged);
      sweeper = setInterval(sweep, Math.max(1000, Math.min(idleTimeoutMs, 60_000)));
      sweeper.unref();
    }
    log.info({ sessionId: s.id, conversationId: s.conversationId }, 'MCP session opened');
  }

  function forget(id: string): void {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    if (sessions.size === 0) {
      registry.off('change', onToolsChanged);
      if (sweeper) clearInterval(sweeper);
      sweeper = undefined;
    }
    log.info({ sessionId: id, conversationId: s.conversationId }, 'MCP session closed');
  }

  async function closeSession(s: Session): Promise<void> {
    forget(s.id);
    try {
      // Closes the transport too (its SSE streams end), which calls back into forget: a no-op by then.
      await s.server.close();
    } catch (err) {
      log.warn({ err, sessionId: s.id }, 'closing an MCP session failed');
    }
  }

  async function openSession(req: Request, res: Response, conversationId: string): Promise<void> {
    if (closed) return rpcError(res, 503, -32000, 'The server is shutting down');
    if (sessions.size + pending.size >= maxSessions) {
      return sendProblem(res, 'unavailable', 'Too many open MCP sessions; retry later');
    }
    const server = createConversationServer(services, conversationId);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        pending.delete(transport);
        opened({ id, conversationId, transport, server, lastSeen: Date.now() });
      },
    });
    transport.onerror = (err) => log.debug({ err, conversationId }, 'MCP transport error');
    // server.connect chains its own close handler after this one.
    transport.onclose = () => {
      pending.delete(transport);
      if (transport.sessionId) forget(transport.sessionId);
    };
    pending.add(transport);
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } finally {
      pending.delete(transport);
      // An initialize that failed (bad headers, bad params) leaves nothing behind.
      if (!transport.sessionId) await server.close().catch(() => undefined);
    }
  }

  async function handle(req: Request, res: Response): Promise<void> {
    const conversationId = req.params.conversationId;
    if (!isValidId(conversationId)) {
      return sendProblem(res, 'validation_failed', `conversationId ${ID_RULE}`, [
        { path: 'conversationId', message: ID_RULE },
      ]);
    }
    const header = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    if (sessionId === undefined || sessionId === '') {
      if (req.method === 'POST' && isInitializeRequest(req.body)) return openSession(req, res, conversationId);
      return rpcError(res, 400, -32000, 'Bad Request: no valid mcp-session-id; send an initialize request first');
    }
    const s = sessions.get(sessionId);
    // A session belongs to the conversation it was opened for; under another URL it does not exist.
    if (!s || s.conversationId !== conversationId) return rpcError(res, 404, -32001, 'Session not found');
    s.lastSeen = Date.now();
    await s.transport.handleRequest(req, res, req.body);
  }

  const router = Router() as McpRouter;
  const endpoint = (req: Request, res: Response): void => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err }, 'MCP request failed');
      if (!res.headersSent) rpcError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  };
  router.post(MCP_PATH, endpoint);
  router.get(MCP_PATH, endpoint);
  router.delete(MCP_PATH, endpoint);

  router.close = async () => {
    closed = true;
    const open = [...sessions.values()];
    const starting = [...pending];
    pending.clear();
    await Promise.all([...open.map(closeSession), ...starting.map((t) => t.close().catch(() => undefined))]);
    routers.get(services)?.delete(router);
  };
  Object.defineProperty(router, 'sessionCount', { get: () => sessions.size });

  let set = routers.get(services);
  if (!set) routers.set(services, (set = new Set()));
  set.add(router);
  return router;
}

/**
 * Closes every MCP session of the app built with these services: call it on
 * shutdown before (or together with) `server.close()`, since an open GET
 * stream would otherwise hold its connection until the grace period ends.
 */
export async function closeMcpSessions(services: Services): Promise<void> {
  const set = routers.get(services);
  if (!set) return;
  await Promise.all([...set].map((r) => r.close()));
}
