/**
 * One MCP server (the SDK v2's low-level Server) bound to one conversation
 * and one caller, built afresh for every HTTP request the SDK's serving
 * entry answers (conversation-mcp.ts): it holds nothing between requests, so
 * any replica answers any request. Its tools/call handler, `callTool`, is
 * also what the endpoint's fast path runs (mcp-fast-path.ts).
 * Tools are the conversation's actions; every tools/call goes through
 * `manager.negotiate`, the one path for routing, permissions, policy,
 * approvals, audit and transactions. Resources are the conversation's shared
 * context, read-only.
 */
import {
  type CallToolRequestParams,
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  Server,
} from '@modelcontextprotocol/server';
import type { HoldRequest } from '../core/held-calls';
import type { NegotiateRequest, NegotiationResult } from '../core/negotiation';
import type { Principal } from '../core/principal';
import { isValidId } from '../core/resource-names';
import { queryPage } from '../core/resource-query';
import type { Resource, ResourcePage } from '../core/tool-interface';
import { AppError, isUnavailable } from '../core/errors';
import type { Logger } from '../logger';
import type { Services } from '../services';
import { mcpToolDefinitions } from './tool-definitions';
import { callResult, unknownToolError } from './tool-results';

export const SERVER_NAME = 'tool-orchestrator';
export const SERVER_VERSION = '0.1.0';

/**
 * How long a client may keep a tools/list or resources/* result (the 2026-07-28
 * caching hints). Short, because the list also follows the conversation's
 * policy and permissions, which change over REST without a notification; a
 * tool-set change is announced on the notification streams besides.
 */
export const LIST_TTL_MS = 10_000;
/** Results depend on the caller (policy, agent key's maxLevel): never shared between callers. */
const CACHE = { ttlMs: LIST_TTL_MS, cacheScope: 'private' as const };

const MIME = 'application/json';
const RESOURCES_PAGE = 500;
const URI_RE = /^context:\/\/([^/]+)\/([^/]+)$/;

export function resourceUri(conversationId: string, name: string): string {
  return `context://${conversationId}/${name}`;
}

/** `context://CONVERSATION/NAME` (segments may be percent-encoded), or undefined. */
export function parseResourceUri(uri: string): { conversationId: string; name: string } | undefined {
  const m = URI_RE.exec(uri);
  if (!m) return undefined;
  try {
    const conversationId = decodeURIComponent(m[1]!);
    const name = decodeURIComponent(m[2]!);
    return isValidId(conversationId) && isValidId(name) ? { conversationId, name } : undefined;
  } catch {
    return undefined;
  }
}

/** `_meta.approvalId`: undefined when absent, null when it is not an id. */
function approvalIdOf(meta: Record<string, unknown> | undefined): string | undefined | null {
  const id = meta?.approvalId;
  if (id === undefined) return undefined;
  return typeof id === 'string' && isValidId(id) ? id : null;
}

/** Whom a request is from and for: what the handlers need of the HTTP request. */
export interface ConversationCaller {
  conversationId: string;
  principal: Principal;
  /** The request's X-Request-Id: what the audit records for a call. */
  requestId: string;
  /** A tools/call needing approval is held this long (held-tool-calls.ts); undefined: answered at once. */
  hold?: HoldRequest | undefined;
  /** Told each tools/call's outcome (the request's log line). */
  onNegotiated?: (result: NegotiationResult) => void;
  /**
   * Present when the endpoint left the access decision to negotiate (its fast
   * path): offered each error a handler meets, it takes the ones the
   * endpoint answers itself, as it answers its own access check (negotiate's
   * not_found or forbidden, the database unavailable), and says so.
   */
  refuse?: (err: unknown) => boolean;
}

/** Database trouble becomes a JSON-RPC error with a safe message; nothing else leaks either. */
function internalError(log: Logger, err: unknown, what: string, caller: ConversationCaller): ProtocolError {
  if (err instanceof ProtocolError) return err;
  // Not sent: the endpoint answers this one itself.
  if (caller.refuse?.(err)) return new ProtocolError(ProtocolErrorCode.InternalError, 'Refused');
  // The rule REST's error handler applies (core/errors): the stores mark what the database could not do.
  if (isUnavailable(err)) {
    log.warn({ err }, `database unavailable during ${what}`);
    return new ProtocolError(ProtocolErrorCode.InternalError, 'The database is unavailable; retry later');
  }
  log.error({ err }, `${what} failed`);
  return new ProtocolError(ProtocolErrorCode.InternalError, 'Internal server error');
}

/**
 * One tools/call of `caller`: negotiate's outcome as a tool result
 * (tool-results.ts), or a ProtocolError. The tools/call handler of the
 * per-request server, and what the endpoint's fast path runs for the calls
 * it takes.
 */
export async function callTool(
  services: Services,
  caller: ConversationCaller,
  params: CallToolRequestParams,
): Promise<CallToolResult> {
  const { manager, catalog } = services;
  const { conversationId, principal, requestId, onNegotiated } = caller;
  const log = (): Logger => services.logger.child({ component: 'mcp', conversationId });
  const { name, arguments: args } = params;
  // A retry under an approval names it in the request's _meta (the args stay the action's own).
  const approvalId = approvalIdOf(params._meta);
  if (approvalId === null) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'Invalid params: _meta.approvalId must be an approval id (1 to 128 of A-Z a-z 0-9 : _ -)',
    );
  }
  // negotiate's saveAs, in the request's _meta too (a resource name; a bad one is negotiate's invalid_args).
  const saveAs = params._meta?.saveAs;
  if (saveAs !== undefined && typeof saveAs !== 'string') {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid params: _meta.saveAs must be a resource name');
  }
  // A name that is no tool of this server is a protocol error (-32602), never routed. A quarantined action
  // is one (negotiate refuses it with tool_definition_changed), though tools/list leaves it out.
  const unknown = unknownToolError(catalog.snapshot().set, name);
  if (unknown) throw unknown;
  try {
    const req: NegotiateRequest = {
      action: name,
      args: args ?? {},
      ...(approvalId !== undefined ? { approvalId } : {}),
      ...(saveAs !== undefined ? { saveAs } : {}),
    };
    const run = (r: NegotiateRequest): Promise<NegotiationResult> =>
      manager.negotiate(principal, conversationId, r, { meta: { requestId } });
    const result = caller.hold
      ? (await services.held.negotiate({ p: principal, conversationId, req }, caller.hold, run)).result
      : await run(req);
    onNegotiated?.(result);
    return await callResult(catalog.snapshot().set, result, (issue) =>
      log().error({ tool: result.routing?.tool, action: result.routing?.action }, issue),
    );
  } catch (err) {
    throw internalError(log(), err, 'tools/call', caller);
  }
}

/**
 * The MCP server of one conversation for one principal, for one HTTP request
 * (`requestId`, its X-Request-Id, is what the audit records for a call).
 */
export function createConversationServer(services: Services, caller: ConversationCaller): Server {
  const { catalog, stores, logger } = services;
  const { conversationId, principal } = caller;
  const log = logger.child({ component: 'mcp', conversationId });
  const internal = (err: unknown, what: string): ProtocolError => internalError(log, err, what, caller);

  const server = new Server(
    { name: SERVER_NAME, version: SERVER_VERSION },
    {
      // subscribe: resource changes reach a subscriptions/listen stream (its resourceSubscriptions) or the GET stream.
      capabilities: { tools: { listChanged: true }, resources: { subscribe: true } },
      instructions:
        `Tools of the conversation ${conversationId}, named tool_action. A call needing a higher permission ` +
        'level fails with the approval reason and an approval id; once the conversation owner approves it (REST), ' +
        'call again with the same arguments and _meta.approvalId.',
    },
  );

  server.setRequestHandler('tools/list', async () => {
    try {
      // Quarantined actions are never listed: they cannot run (tool-catalog.ts).
      const set = catalog.snapshot().callable;
      const { policy } = await stores.decisions.load(conversationId, '', undefined);
      return { tools: mcpToolDefinitions(set, policy, principal.maxLevel), ...CACHE };
    } catch (err) {
      throw internal(err, 'tools/list');
    }
  });

  server.setRequestHandler('tools/call', (request) => callTool(services, caller, request.params));

  serveResources(server, services, conversationId, internal);
  return server;
}

/** The conversation's shared context as MCP resources: listed in pages, one URI template, read one by one. */
function serveResources(
  server: Server,
  services: Services,
  conversationId: string,
  internal: (err: unknown, what: string) => ProtocolError,
): void {
  const { resources } = services;
  server.setRequestHandler('resources/list', async (request) => {
    const cursor = request.params?.cursor;
    let page: ResourcePage;
    try {
      // The shared query path (src/core/resource-query.ts): name order, its opaque cursors, expired resources left out.
      page = await queryPage(resources.store, conversationId, { limit: RESOURCES_PAGE, ...(cursor ? { cursor } : {}) });
    } catch (err) {
      if (err instanceof AppError && err.code === 'validation_failed') {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
      }
      throw internal(err, 'resources/list');
    }
    return {
      resources: page.resources.map((r) => ({
        uri: resourceUri(conversationId, r.name),
        name: r.name,
        title: r.name,
        description: `Shared-context resource of conversation ${conversationId} (version ${r.version}, last updated by ${r.updatedBy})`,
        mimeType: MIME,
      })),
      ...(page.nextCursor !== null ? { nextCursor: page.nextCursor } : {}),
      ...CACHE,
    };
  });

  server.setRequestHandler('resources/templates/list', () => ({
    resourceTemplates: [
      {
        uriTemplate: `context://${conversationId}/{name}`,
        name: 'shared-context',
        description: `A resource of the shared context of conversation ${conversationId}`,
        mimeType: MIME,
      },
    ],
    ...CACHE,
  }));

  acceptSubscriptions(server);

  server.setRequestHandler('resources/read', async (request) =>
    readResource(services, conversationId, internal, request.params.uri),
  );
}

/**
 * resources/subscribe and unsubscribe of 2025-era clients, acknowledged: stateless serving keeps no
 * subscription, and the GET stream carries every resource of this conversation, and only those
 * (legacy-stream.ts), whatever URI was named.
 */
function acceptSubscriptions(server: Server): void {
  server.setRequestHandler('resources/subscribe', () => ({}));
  server.setRequestHandler('resources/unsubscribe', () => ({}));
}

/** resources/read of one `uri` of this conversation's shared context. */
async function readResource(
  services: Services,
  conversationId: string,
  internal: (err: unknown, what: string) => ProtocolError,
  uri: string,
) {
  const { resources } = services;
  const parsed = parseResourceUri(uri);
  if (!parsed) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'Invalid resource URI: expected context://CONVERSATION/NAME',
      { uri },
    );
  }
  if (parsed.conversationId !== conversationId) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'The resource URI names another conversation than this endpoint',
      {
        uri,
      },
    );
  }
  let resource: Resource | undefined;
  try {
    resource = await resources.find(conversationId, parsed.name);
  } catch (err) {
    throw internal(err, 'resources/read');
  }
  // -32602 with the URI in data, as the 2026-07-28 revision has it (2025's -32002 is gone).
  if (!resource) throw new ResourceNotFoundError(uri);
  // Fresh for a short while only: the resource may be written over REST at any time.
  return { contents: [{ uri, mimeType: MIME, text: JSON.stringify(resource) }], ttlMs: 0, cacheScope: 'private' };
}
