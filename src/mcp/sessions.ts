/**
 * The open MCP sessions of one `/conversations/{id}/mcp` router: each a
 * Streamable HTTP transport (the official SDK's) joined to an MCP server bound
 * to one conversation (conversation-server.ts). A session opens on an
 * initialize request, is found by its `mcp-session-id` under its own
 * conversation's URL, and ends on DELETE (the transport handles that), after
 * an idle timeout, or when the router closes. While any is open, a hot reload
 * reaches every session as `notifications/tools/list_changed`.
 *
 * Sessions live in this process: several replicas behind a gateway need
 * sticky routing by `mcp-session-id`. This file knows no express: the router
 * (conversation-mcp.ts) turns a refusal into a response.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { type Principal, principalKey } from '../core/principal';
import type { Services } from '../services';
import { createConversationServer } from './conversation-server';

export interface McpSessionOptions {
  /** Open sessions at most; an initialize beyond it gets 503. Default 1000. */
  maxSessions?: number;
  /** A session without any request for this long is closed. Default 30 minutes. */
  idleTimeoutMs?: number;
  /** Open sessions one principal may hold; an initialize beyond it gets 429. Default 16. */
  maxSessionsPerPrincipal?: number;
}

/** Why an initialize cannot open a session now: the router is closing, the table is full, or the principal holds its share. */
export type OpenRefusal = 'closing' | 'full' | 'principal-full';

export interface McpSessions {
  /** Open sessions (for tests and metrics). */
  readonly size: number;
  /** Why a new session cannot open now for this principal, or undefined when it can. */
  refusal(principal: Principal): OpenRefusal | undefined;
  /**
   * Answers an initialize request through a new transport. The session exists
   * once the SDK has given it an id; an initialize that fails leaves nothing.
   */
  open(
    conversationId: string,
    principal: Principal,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
  ): Promise<void>;
  /**
   * The transport of session `id` if it was opened for this conversation by
   * this principal, marked as just used; to anyone else it does not exist.
   */
  find(id: string, conversationId: string, principal: Principal): StreamableHTTPServerTransport | undefined;
  /** Closes every session (and its SSE streams) and refuses new ones. */
  closeAll(): Promise<void>;
}

interface Session {
  id: string;
  conversationId: string;
  /** Who opened it (principalKey): only it may use the session. */
  owner: string;
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
}

const DEFAULT_MAX_SESSIONS = 1000;
const DEFAULT_MAX_PER_PRINCIPAL = 16;

const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60 * 1000;

export function createMcpSessions(services: Services, options: McpSessionOptions = {}): McpSessions {
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const maxPerPrincipal = options.maxSessionsPerPrincipal ?? DEFAULT_MAX_PER_PRINCIPAL;
  /** Open and initializing sessions per principal. */
  const held = new Map<string, number>();
  const hold = (owner: string, delta: number): void => {
    const n = (held.get(owner) ?? 0) + delta;
    if (n > 0) held.set(owner, n);
    else held.delete(owner);
  };
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
    hold(s.owner, -1);
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

  async function open(
    conversationId: string,
    principal: Principal,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
  ): Promise<void> {
    const owner = principalKey(principal);
    const server = createConversationServer(services, conversationId, principal);
    // Counted from now: sessions still initializing hold a server and a transport too.
    hold(owner, 1);
    let counted = true;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        pending.delete(transport);
        // From here the session's count is released by forget().
        counted = false;
        opened({ id, conversationId, owner, transport, server, lastSeen: Date.now() });
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
      await transport.handleRequest(req, res, body);
    } finally {
      pending.delete(transport);
      if (counted) hold(owner, -1);
      // An initialize that failed (bad headers, bad params) leaves nothing behind.
      if (!transport.sessionId) await server.close().catch(() => undefined);
    }
  }

  return {
    get size() {
      return sessions.size;
    },
    refusal(principal) {
      if (closed) return 'closing';
      if ((held.get(principalKey(principal)) ?? 0) >= maxPerPrincipal) return 'principal-full';
      // Sessions still initializing count: they hold a server and a transport too.
      return sessions.size + pending.size >= maxSessions ? 'full' : undefined;
    },
    open,
    find(id, conversationId, principal) {
      const s = sessions.get(id);
      // A session belongs to the conversation it was opened for, and to who opened it; to anyone else it does not exist.
      if (!s || s.conversationId !== conversationId || s.owner !== principalKey(principal)) return undefined;
      s.lastSeen = Date.now();
      return s.transport;
    },
    async closeAll() {
      closed = true;
      const active = [...sessions.values()];
      const starting = [...pending];
      pending.clear();
      await Promise.all([...active.map(closeSession), ...starting.map((t) => t.close().catch(() => undefined))]);
    },
  };
}
