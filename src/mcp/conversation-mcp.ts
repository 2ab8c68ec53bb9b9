/**
 * `/conversations/{id}/mcp`: the express router of a Model Context Protocol
 * server per conversation over the Streamable HTTP transport. Stateful: an
 * initialize request without a session opens one (sessions.ts), bound to the
 * conversation in its URL; later requests carry `mcp-session-id`; DELETE ends
 * it. GET opens the SSE stream that carries `notifications/tools/list_changed`
 * after a hot reload. This file checks the URL and the session header and
 * answers what the transport does not (JSON-RPC errors, problem+json).
 */
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Router, type Request, type Response } from 'express';
import { ID_RULE, isValidId } from '../core/resource-names';
import { AppError, isUnavailable } from '../core/errors';
import type { Principal } from '../core/principal';
import { principalOf } from '../http/authenticate';
import { errorHandler as httpErrorHandler, sendProblem } from '../http/middleware';
import type { Services } from '../services';
import { createMcpSessions, type McpSessionOptions } from './sessions';

export const MCP_PATH = '/conversations/:conversationId/mcp';
export const METADATA_PATH = '/.well-known/oauth-protected-resource/conversations/:conversationId/mcp';

export interface McpRouter extends Router {
  /** Closes every session (and its SSE streams); later requests get "session not found". */
  close(): Promise<void>;
  /** Open sessions (for tests and metrics). */
  readonly sessionCount: number;
}

// Routers by the Services they were built for, so the entry file can close them knowing only `services`.
const routers = new WeakMap<Services, Set<McpRouter>>();

/** JSON-RPC error body, as the SDK's transport itself answers transport-level errors. */
function rpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

export function mcpRouter(services: Services, options: McpSessionOptions = {}): McpRouter {
  const log = services.logger.child({ component: 'mcp' });
  const errorHandler = httpErrorHandler(services.logger);
  const sessions = createMcpSessions(services, {
    maxSessionsPerPrincipal: services.config.mcpMaxSessionsPerPrincipal,
    ...options,
  });

  async function initialize(req: Request, res: Response, conversationId: string, principal: Principal): Promise<void> {
    const refusal = sessions.refusal(principal);
    if (refusal === 'closing') return rpcError(res, 503, -32000, 'The server is shutting down');
    if (refusal === 'full') return sendProblem(res, 'unavailable', 'Too many open MCP sessions; retry later');
    if (refusal === 'principal-full') {
      return sendProblem(
        res,
        'rate_limited',
        `This principal holds ${services.config.mcpMaxSessionsPerPrincipal} open MCP sessions (MCP_MAX_SESSIONS_PER_PRINCIPAL); end one (DELETE) before opening another`,
      );
    }
    await sessions.open(conversationId, principal, req, res, req.body);
  }

  async function handle(req: Request, res: Response): Promise<void> {
    const conversationId = req.params.conversationId;
    if (!isValidId(conversationId)) {
      return sendProblem(res, 'validation_failed', `conversationId ${ID_RULE}`, [
        { path: 'conversationId', message: ID_RULE },
      ]);
    }
    // The conversation's agent keys, its owner and admins; anyone else learns nothing of it.
    const principal = principalOf(req);
    if (await services.access.checkOrCreate(principal, conversationId, 'negotiate', 'use the MCP endpoint')) {
      await services.audit.changed(principal, 'conversation.created', conversationId, req.id ?? '-');
    }
    const header = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    if (sessionId === undefined || sessionId === '') {
      if (req.method === 'POST' && isInitializeRequest(req.body))
        return initialize(req, res, conversationId, principal);
      return rpcError(res, 400, -32000, 'Bad Request: no valid mcp-session-id; send an initialize request first');
    }
    const transport = sessions.find(sessionId, conversationId, principal);
    if (!transport) return rpcError(res, 404, -32001, 'Session not found');
    // The request id (given or made) as the tool calls see it (extra.authInfo): the audit records it.
    (req as { auth?: AuthInfo }).auth = { token: '', clientId: '', scopes: [], extra: { requestId: req.id } };
    await transport.handleRequest(req, res, req.body);
  }

  const router = Router() as McpRouter;
  const endpoint = (req: Request, res: Response): void => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof AppError || isUnavailable(err)) {
        // The access decision (404/403) or the database's trouble (503): problem+json like every endpoint.
        if (!res.headersSent) return errorHandler(err, req, res, () => undefined);
      }
      log.error({ err }, 'MCP request failed');
      if (!res.headersSent) rpcError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  };
  // RFC 9728: where a client that got our 401 learns how to authenticate here. Public (no token).
  router.get(METADATA_PATH, (req, res) => {
    const conversationId = req.params.conversationId;
    if (!isValidId(conversationId)) {
      return sendProblem(res, 'validation_failed', `conversationId ${ID_RULE}`, [
        { path: 'conversationId', message: ID_RULE },
      ]);
    }
    const base = `${req.protocol}://${req.get('host') ?? 'localhost'}`;
    const jwt = services.config.jwt;
    res.json({
      resource: `${base}/conversations/${encodeURIComponent(conversationId)}/mcp`,
      ...(jwt ? { authorization_servers: [jwt.issuer] } : {}),
      bearer_methods_supported: ['header'],
      resource_name: `Tool gateway MCP server of conversation ${conversationId}`,
    });
  });
  router.post(MCP_PATH, endpoint);
  router.get(MCP_PATH, endpoint);
  router.delete(MCP_PATH, endpoint);

  router.close = async () => {
    await sessions.closeAll();
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
