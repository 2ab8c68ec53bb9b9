/**
 * The MCP endpoint's fast path: a 2026-07-28 `tools/call` of a listed tool,
 * served by one long-lived server instead of the SDK's per-request serving.
 *
 * `createMcpHandler` serves each HTTP request with a fresh server instance:
 * the Node request is converted to a web `Request`, the server is built,
 * connected to a single-use transport and closed again, and the web
 * `Response` is streamed back into Node's. A profile of the endpoint under
 * load (docs/BENCHMARKS.md §9) put that machinery, not the handlers, at most
 * of the cost of a call. The fast path keeps what decides the answer, the
 * SDK's own code, and drops the rest:
 * - the request is classified by the SDK's `classifyInboundRequest` (the
 *   entry's own era decision and envelope validation), and taken only when
 *   the standard headers repeat the body exactly (`MCP-Protocol-Version`,
 *   `Mcp-Method`, `Mcp-Name`), so the SDK's header checks would pass it too;
 * - the message goes to one server built once per endpoint
 *   (conversation-server.ts), through a transport that carries many
 *   exchanges at once, each with its caller in its authInfo: the server's
 *   protocol layer validates the request, runs the handler, validates and
 *   encodes the result as it does on a per-request instance;
 * - the JSON-RPC response is written with one `res.end`.
 * Anything else (other methods, the 2025 era, a header that does not repeat
 * the body, an error the protocol layer answers before the handler runs)
 * goes the SDK's way, where it is answered as before.
 *
 * The access decision is negotiate's (the decision statement reads the
 * owner, as REST negotiate does): no round trip of its own. Its refusal is
 * answered as the endpoint answers its own access check (problem+json).
 */
import {
  type AuthInfo,
  classifyInboundRequest,
  isJsonContentType,
  type JSONRPCMessage,
  type JSONRPCRequest,
  PerRequestHTTPServerTransport,
  type Server,
} from '@modelcontextprotocol/server';
import type { Request } from 'express';

/** The revision the fast path serves (the SDK's only modern one). */
export const MODERN_REVISION = '2026-07-28';
const CLASSIFICATION = { era: 'modern' as const, revision: MODERN_REVISION };

/** A response of the shared server, its JSON-RPC id the client's again. */
export interface SharedAnswer {
  message: JSONRPCMessage;
  /**
   * Sent while the message was being delivered, before any handler ran: a
   * rejection of the protocol layer's own (the SDK's HTTP entry gives those
   * their own HTTP status). The fast path hands such a request to the SDK.
   */
  early: boolean;
}

interface Pending {
  clientId: string | number;
  resolve: (answer: SharedAnswer) => void;
  reject: (err: Error) => void;
}

/**
 * A transport for one long-lived server that carries many exchanges at
 * once: each message gets an id of its own on the way in (clients' ids
 * repeat across requests), and its response is matched back by it.
 *
 * It extends the SDK's per-request transport for one reason: a `Server`
 * connected to one is bound to that transport's classified revision (the
 * 2026-07-28 era: its wire codec, result stamping and envelope checks).
 * None of the per-request transport's own serving runs: `start`, `send` and
 * `close` are this class's.
 */
export class SharedServerTransport extends PerRequestHTTPServerTransport {
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();
  private delivering = false;
  private shut = false;

  constructor() {
    super({ classification: CLASSIFICATION, responseMode: 'json' });
  }

  override start(): Promise<void> {
    return Promise.resolve();
  }

  /** Serves one request: resolves with its response, rejects when the transport closes first. */
  exchange(request: JSONRPCRequest, authInfo: AuthInfo): Promise<SharedAnswer> {
    if (this.shut || !this.onmessage) return Promise.reject(new Error('The shared MCP server is closed'));
    const id = (this.nextId = this.nextId >= Number.MAX_SAFE_INTEGER ? 1 : this.nextId + 1);
    return new Promise<SharedAnswer>((resolve, reject) => {
      this.pending.set(id, { clientId: request.id, resolve, reject });
      this.delivering = true;
      try {
        this.onmessage!({ ...request, id }, { authInfo, classification: CLASSIFICATION });
      } finally {
        this.delivering = false;
      }
    });
  }

  override send(message: JSONRPCMessage): Promise<void> {
    // Only responses are expected: the handlers send no notifications or requests of their own.
    if (!('id' in message) || 'method' in message || typeof message.id !== 'number') return Promise.resolve();
    const pending = this.pending.get(message.id);
    if (pending) {
      this.pending.delete(message.id);
      pending.resolve({ message: { ...message, id: pending.clientId }, early: this.delivering });
    }
    return Promise.resolve();
  }

  override close(): Promise<void> {
    if (this.shut) return Promise.resolve();
    this.shut = true;
    const error = new Error('The shared MCP server closed');
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
    this.onclose?.();
    return Promise.resolve();
  }
}

/** The shared server on its transport, ready for exchanges. */
export async function connectShared(server: Server): Promise<SharedServerTransport> {
  const transport = new SharedServerTransport();
  await server.connect(transport);
  return transport;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The request as the fast path takes it, or undefined for the SDK's way:
 * a POST of one JSON-RPC `tools/call` request, 2026-07-28, of a tool named
 * in `toolNames`, whose headers repeat the body exactly and which the SDK
 * classifies as a modern request of that revision.
 */
export function fastToolCall(req: Request, toolNames: ReadonlySet<string>): JSONRPCRequest | undefined {
  if (req.method !== 'POST' || !isJsonContentType(req.headers['content-type'])) return undefined;
  const body = req.body as unknown;
  if (!isPlainObject(body) || body.method !== 'tools/call' || body.jsonrpc !== '2.0') return undefined;
  const params = body.params;
  if (!isPlainObject(params) || typeof params.name !== 'string' || !toolNames.has(params.name)) return undefined;
  const { headers } = req;
  if (
    headers['mcp-protocol-version'] !== MODERN_REVISION ||
    headers['mcp-method'] !== 'tools/call' ||
    headers['mcp-name'] !== params.name
  ) {
    return undefined;
  }
  const route = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader: MODERN_REVISION,
    mcpMethodHeader: 'tools/call',
    mcpNameHeader: params.name,
    body,
  });
  if (route.kind !== 'modern' || route.messageKind !== 'request' || route.classification.revision !== MODERN_REVISION) {
    return undefined;
  }
  return route.message;
}
