/**
 * `/conversations/{id}/mcp`: the express router of a Model Context Protocol
 * server per conversation over Streamable HTTP, on the official SDK v2
 * (`createMcpHandler` from @modelcontextprotocol/server, adapted to express
 * with `toNodeHandler` from @modelcontextprotocol/node).
 *
 * Stateless, for both protocol eras: nothing is kept between requests, so
 * any replica answers any request and no sticky routing is needed. A
 * 2026-07-28 `tools/call` of a listed tool, the endpoint's common request,
 * takes the fast path (mcp-fast-path.ts): the same handler answers it
 * without the SDK's per-request server, and negotiate makes the access
 * decision with the call's own decision statement. Every other
 * request gets a fresh server (conversation-server.ts) for its conversation
 * and caller from the SDK's serving entry, after the access check here.
 * - 2026-07-28: each request carries its version and capabilities;
 *   `server/discover`, `subscriptions/listen` (a long-lived SSE response),
 *   the Mcp-Method/Mcp-Name header checks and the JSON-RPC errors of the
 *   revision are the SDK's.
 * - 2025-11-25 / 2025-06-18: the SDK's stateless legacy leg answers
 *   `initialize` and every later POST without a session id; the GET stream
 *   of those clients is served here (legacy-stream.ts), fed by the same bus.
 *
 * Change events (a hot reload of TOOLS_DIR) go through the event bus
 * (event-bus.ts: Postgres LISTEN/NOTIFY), so a listener on any replica hears
 * of a change on any other. Long-lived streams (listen and the 2025 GET) are
 * the only thing a replica holds per client: they are bounded per principal
 * and in all.
 *
 * This file checks the URL and the caller (the conversation's agent keys, its
 * owner, admins; the app's middleware has already checked the token, Host
 * and Origin) and answers what the SDK does not (problem+json for the access
 * decision, JSON-RPC errors for bodies express could not parse).
 */
import { createMcpHandler, type AuthInfo, type McpHttpHandler } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { Router, type Request, type Response } from 'express';
import { ID_RULE, isValidId } from '../core/resource-names';
import { AppError, isUnavailable, RESERVED_CONVERSATION_ID } from '../core/errors';
import { type Principal, principalKey } from '../core/principal';
import type { ToolSetChangeCause } from '../core/tool-registry';
import { refusesHead } from '../http/allowed-methods';
import { principalOf } from '../http/authenticate';
import {
  errorHandler as httpErrorHandler,
  noteNegotiation,
  sendMethodNotAllowed,
  sendProblem,
} from '../http/middleware';
import type { Logger } from '../logger';
import type { Services } from '../services';
import { createConversationServer } from './conversation-server';
import { createMcpEventBus, type McpEventBus } from './event-bus';
import { withResourceUpdates } from './resource-updates';
import { METADATA_PATH, protectedResourceMetadata } from './protected-resource-metadata';
import { type McpCaller, serveFast } from './fast-path-serving';
import { invalidParams, messageId, rpcError } from './json-rpc-errors';
import { fastToolCall } from './mcp-fast-path';
import { mcpHold } from './held-tool-calls';
import { StreamLimits } from './stream-limits';
import { type StreamServing, serveStream } from './stream-serving';
import { mcpToolNames } from './tool-definitions';

export const MCP_PATH = '/conversations/:conversationId/mcp';
/**
 * The methods served at MCP_PATH, and so its Allow header: POST (every
 * JSON-RPC message) and GET (the 2025 notification stream). Not DELETE: it
 * ends a 2025 session and there is none (the SDK's stateless serving answers
 * it 405 too); not HEAD, since GET opens a stream; not OPTIONS. Anything else
 * is a 405 naming these.
 */
export const MCP_METHODS = ['GET', 'POST'] as const;

export interface McpRouterOptions {
  /** Open notification streams (listen + 2025 GET) of this replica at most; beyond it 503. Default 1000. */
  maxStreams?: number;
  /** Open notification streams one principal may hold on this replica; beyond it 429. Default: config. */
  maxStreamsPerPrincipal?: number;
  /** SSE keep-alive comment interval on long-lived streams. Default 15 s. */
  keepAliveMs?: number;
}

export interface McpRouter extends Router {
  /** Ends every open stream and stops the event bus; later requests get 503. */
  close(): Promise<void>;
  /** Open notification streams of this replica (for tests and metrics). */
  readonly streamCount: number;
  /** The change-event bus (tests wait on `bus.ready()` before publishing from another replica). */
  readonly bus: McpEventBus;
}

/** `_meta.approvalId` absent or an id, `_meta.saveAs` absent or a string: the tools/call handler then goes to negotiate, which decides access. */
function reachesNegotiate(params: Record<string, unknown> | undefined): boolean {
  const meta = params?._meta as Record<string, unknown> | undefined;
  const id = meta?.approvalId;
  const saveAs = meta?.saveAs;
  return (
    (id === undefined || (typeof id === 'string' && isValidId(id))) &&
    (saveAs === undefined || typeof saveAs === 'string')
  );
}

// Routers by the Services they were built for, so the entry file can close them knowing only `services`.
const routers = new WeakMap<Services, Set<McpRouter>>();

const DEFAULT_MAX_STREAMS = 1000;
// Proxies commonly drop a connection idle for 30 to 60 s; a comment every 15 s keeps listen streams open.
const DEFAULT_KEEP_ALIVE_MS = 15_000;

/** What serving one request needs of the router that took it (made once per router). */
interface McpServing {
  services: Services;
  /** The SDK's serving entry. */
  node: StreamServing['node'];
  streams: StreamServing;
  /** The router was closed (shutting down): nothing new is served. */
  isClosed: () => boolean;
}

/** Auth info as the SDK passes it through to handlers (the caller in `extra`). */
function authInfoOf(caller: McpCaller): AuthInfo {
  return {
    token: '',
    clientId: principalKey(caller.principal),
    scopes: [],
    extra: caller as unknown as Record<string, unknown>,
  };
}

/**
 * May `principal` use the conversation's MCP server? Only a JSON-RPC request creates the conversation on
 * first use (as negotiate does); a stream or a body the SDK will refuse only checks access.
 */
async function checkAccess(
  services: Services,
  req: Request,
  principal: Principal,
  conversationId: string,
): Promise<void> {
  const message = req.body as { jsonrpc?: unknown; method?: unknown } | undefined;
  const creates = req.method === 'POST' && message?.jsonrpc === '2.0' && typeof message.method === 'string';
  const use = { conversationId, right: 'negotiate', what: 'use the MCP endpoint' } as const;
  if (!creates) return services.access.check(principal, conversationId, use.right, use.what);
  return services.conversations.openOnFirstUse(principal, { ...use, requestId: req.id ?? '-' });
}

async function handle(serving: McpServing, req: Request, res: Response): Promise<void> {
  const { services, node, streams, isClosed } = serving;
  const conversationId = req.params.conversationId;
  if (!isValidId(conversationId)) {
    return sendProblem(res, 'validation_failed', `conversationId ${ID_RULE}`, [
      { path: 'conversationId', message: ID_RULE },
    ]);
  }
  // Batches were removed in 2025-06-18 (the oldest version served) and are not part of 2026-07-28; the
  // SDK's legacy transport would still run up to 100 calls of one, all on one request's rate-limit token.
  if (Array.isArray(req.body)) {
    return rpcError(
      res,
      400,
      -32600,
      'Invalid Request: JSON-RPC batches are not supported; send one message per request',
    );
  }
  // The conversation's agent keys, its owner and admins; anyone else learns nothing of it.
  const principal = principalOf(req);
  const message = req.body as { jsonrpc?: unknown; method?: unknown; params?: Record<string, unknown> } | undefined;
  // A tools/call of a listed tool (2026-07-28, or 2025 without an envelope): the fast path, where negotiate
  // decides access too.
  if (!isClosed() && conversationId !== RESERVED_CONVERSATION_ID && reachesNegotiate(message?.params)) {
    const call = fastToolCall(req, mcpToolNames(services.catalog.snapshot().set));
    if (call)
      return serveFast(services, req, res, { principal, conversationId, call, hold: mcpHold(services, req, res) });
  }
  await checkAccess(services, req, principal, conversationId);
  if (isClosed()) return rpcError(res, 503, -32000, 'The server is shutting down');
  const caller: McpCaller = {
    principal,
    conversationId,
    requestId: req.id ?? '-',
    onNegotiated: (result) => noteNegotiation(req, result),
    hold: message?.method === 'tools/call' ? mcpHold(services, req, res) : undefined,
  };
  (req as { auth?: AuthInfo }).auth = authInfoOf(caller);

  // The SDK answers a spec method whose params fail its schema with -32603 (an internal error):
  // the params this endpoint reads are checked here first, answered -32602 as the spec has it.
  const paramsIssue = req.method === 'POST' ? invalidParams(message) : undefined;
  if (paramsIssue) return rpcError(res, 200, -32602, `Invalid params: ${paramsIssue}`, messageId(req.body));
  const streaming = req.method === 'GET' || (req.method === 'POST' && message?.method === 'subscriptions/listen');
  if (!streaming) return node(req, res, req.body);

  return serveStream(streams, req, res, principal);
}

/**
 * The tool-set change events of this router: another replica's change reloads what this one serves
 * before its listeners are told; this replica's own change is announced to every replica (one made on
 * another's word is not sent back). `stop` ends the announcing; the bus is closed by its owner.
 */
function followToolChanges(services: Services, log: Logger): { bus: McpEventBus; stop(): void } {
  const registry = services.catalog.registry;
  const bus = createMcpEventBus(services.db, log, { onRemoteToolsChanged: () => registry.reload('remote') });
  const onToolsChanged = (_set: unknown, cause?: ToolSetChangeCause): void => {
    if (cause !== 'remote') bus.publish({ kind: 'tools_list_changed' });
  };
  registry.on('change', onToolsChanged);
  return { bus, stop: () => registry.off('change', onToolsChanged) };
}

/** The SDK's serving entry: a fresh conversation server per request, for the caller the access check put in its auth info. */
function sdkServing(
  services: Services,
  bus: McpEventBus,
  streams: { maxStreams: number; keepAliveMs: number },
  log: Logger,
): { handler: McpHttpHandler; node: StreamServing['node'] } {
  const handler: McpHttpHandler = createMcpHandler(
    (ctx) => {
      const { principal, conversationId, requestId, onNegotiated, hold } = ctx.authInfo?.extra as unknown as McpCaller;
      return createConversationServer(services, { conversationId, principal, requestId, onNegotiated, hold });
    },
    {
      bus,
      // Bounded here per principal and in all (StreamLimits); the SDK's own cap is a backstop.
      maxSubscriptions: streams.maxStreams + 1,
      keepAliveMs: streams.keepAliveMs,
      onerror: (err) => log.debug({ err }, 'MCP request refused or failed'),
    },
  );
  const node = toNodeHandler(handler, {
    maxRequestBodySize: services.config.bodyLimit,
    onerror: (err) => log.error({ err }, 'MCP handler failed'),
  });
  return { handler, node };
}

/** The routes: the metadata document, POST and GET at MCP_PATH (failures answered), 405 for the rest. */
function mcpRoutes(serving: McpServing, log: Logger): Router {
  const errorHandler = httpErrorHandler(serving.services.logger);
  const router = Router();
  const notAllowed = (req: Request, res: Response): void => sendMethodNotAllowed(res, req.method, MCP_METHODS);
  const endpoint = (req: Request, res: Response): void => {
    // Express hands HEAD to the GET route.
    if (req.method === 'HEAD') return notAllowed(req, res);
    handle(serving, req, res).catch((err: unknown) => {
      if (err instanceof AppError || isUnavailable(err)) {
        // The access decision (404/403) or the database's trouble (503): problem+json like every endpoint.
        if (!res.headersSent) return errorHandler(err, req, res, () => undefined);
      }
      log.error({ err }, 'MCP request failed');
      if (!res.headersSent) rpcError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  };
  router.get(METADATA_PATH, protectedResourceMetadata(serving.services));
  router.post(MCP_PATH, endpoint);
  // GET opens a stream: HEAD is refused (endpoint), and Allow (OPTIONS, 405s) says GET, POST.
  router.get(
    MCP_PATH,
    refusesHead((req: Request, res: Response) => endpoint(req, res)),
  );
  // Every other method, OPTIONS included (express would answer it itself, listing what the router has).
  router.all(MCP_PATH, notAllowed);
  return router;
}

export function mcpRouter(services: Services, options: McpRouterOptions = {}): McpRouter {
  const log = services.logger.child({ component: 'mcp' });
  const maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const limits = new StreamLimits(
    maxStreams,
    options.maxStreamsPerPrincipal ?? services.config.mcpMaxStreamsPerPrincipal,
    services.config.mcpMaxStreamsPerOwner,
  );
  const toolChanges = followToolChanges(services, log);
  // The streams' bus also carries this replica's resource changes (notifications/resources/updated).
  const bus = withResourceUpdates(toolChanges.bus, services.events, log);
  const { handler, node } = sdkServing(services, bus, { maxStreams, keepAliveMs }, log);
  const streams: StreamServing = { services, limits, bus, keepAliveMs, log, node };
  let closed = false;
  const router = mcpRoutes({ services, node, streams, isClosed: () => closed }, log) as McpRouter;

  router.close = async () => {
    if (closed) return;
    closed = true;
    toolChanges.stop();
    await handler.close();
    limits.closeAll();
    await bus.close();
    routers.get(services)?.delete(router);
  };
  Object.defineProperty(router, 'streamCount', { get: () => limits.size });
  Object.defineProperty(router, 'bus', { value: bus });

  let set = routers.get(services);
  if (!set) routers.set(services, (set = new Set()));
  set.add(router);
  return router;
}

/**
 * Closes the MCP endpoints of the app built with these services: open
 * notification streams end (listen streams with their graceful completion),
 * the event bus stops. Call it on shutdown before (or together with)
 * `server.close()`, since an open stream would otherwise hold its connection
 * until the grace period ends.
 */
export async function closeMcpSessions(services: Services): Promise<void> {
  const set = routers.get(services);
  if (!set) return;
  await Promise.all([...set].map((r) => r.close()));
}

/**
 * From now on, the MCP routers of the app built with these services hear every other replica's tool-set
 * change (and reload theirs) whether or not a client listens: one LISTEN connection held for the
 * process's life on Postgres. The entry file calls it once the database is ready; closeMcpSessions ends it.
 */
export function followToolSetChanges(services: Services): void {
  for (const router of routers.get(services) ?? []) router.bus.hold();
}

/** The open MCP router of the app built with these services (tests and metrics read its stream count). */
export function mcpRouterOf(services: Services): McpRouter | undefined {
  const set = routers.get(services);
  return set ? [...set][0] : undefined;
}
