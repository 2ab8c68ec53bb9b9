/**
 * The MCP connectors of participants (API.md "Participants"): `mcp-http`
 * (Streamable HTTP) and `mcp-stdio` (a supervised child process), both on
 * the official SDK v2 client, both speaking 2026-07-28 to an upstream that
 * does and the 2025-era protocol to one that does not.
 *
 * mcp-http: the participant's headers go with every upstream request; a
 * call with per-owner credentials goes over a connection of its own for that
 * header set (a session belongs to its credentials), reused by later calls
 * with the same set: a small cache keyed by a digest of the headers, the
 * least recently used closed beyond its bound.
 *
 * A listed tool with no outputSchema (the SDK client checks structuredContent
 * against it) and no `x-mcp-header` parameters (sent as headers in
 * 2026-07-28) is called without the SDK client once the connection is
 * established (mcp-direct-call.ts), on the guarded fetch's pool; every other
 * request, and every request when the connector was given a fetch of its
 * own, goes through the SDK client.
 */
import { StreamableHTTPClientTransport, type FetchLike, type Implementation } from '@modelcontextprotocol/client';
import { type Dispatcher, getGlobalDispatcher } from 'undici';
import { canonicalJson, sha256Hex } from '../core/canonical-json';
import type { GuardedFetch } from './address-rules';
import { type DirectRoute, plainHeaderValue } from './mcp-direct-call';
import type { ToolLogger } from '../core/tool-interface';
import { callThrough, type CallWhere, listThrough, notifyToolsChanged } from './mcp-calls';
import { McpConnection } from './mcp-connection';
import { type Redactor, redactorOf } from './redaction';
import type { UpstreamCallOptions, UpstreamConnector, UpstreamInfo, UpstreamTool } from './upstream';

export { createMcpStdioConnector, type McpStdioConnectorOptions } from './mcp-stdio-connector';

export interface McpHttpConnectorOptions {
  participant: string;
  url: string;
  headers?: Record<string, string>;
  /** The fetch every upstream request goes through (the address-guarded one). */
  fetch?: typeof fetch;
  logger: ToolLogger;
  clientInfo?: Implementation;
  /** Connections kept for per-owner header sets. Default 32. */
  maxCredentialConnections?: number;
  connectTimeoutMs?: number;
  /** tools/list, all pages. Default 30 s. */
  listTimeoutMs?: number;
  /** Calls of the tools that qualify without the SDK client (mcp-direct-call.ts). Default true. */
  directCalls?: boolean;
}

const DEFAULT_MAX_CREDENTIAL_CONNECTIONS = 32;

type DirectPool = Pick<DirectRoute, 'dispatcher' | 'checkUrl'>;

/**
 * The pool direct calls go through: the guarded fetch's (its address checks
 * with it), or undici's global one when the connector was given no fetch (the
 * SDK client's default, unguarded, too); none for a fetch of the caller's own.
 */
function directPoolOf(options: McpHttpConnectorOptions): DirectPool | undefined {
  if (options.directCalls === false) return undefined;
  if (options.fetch === undefined) return { dispatcher: getGlobalDispatcher() };
  const guarded = options.fetch as Partial<GuardedFetch>;
  const dispatcher: Dispatcher | undefined = guarded.dispatcher;
  if (dispatcher === undefined || guarded.checkUrl === undefined) return undefined;
  return { dispatcher, checkUrl: guarded.checkUrl };
}

/** A listed tool the direct path can call as the SDK client would (see the header comment). */
function callsDirectly(tool: UpstreamTool): boolean {
  return (
    tool.outputSchema === undefined &&
    plainHeaderValue(tool.upstreamName) &&
    !JSON.stringify(tool.inputSchema).includes('x-mcp-header')
  );
}

function lowerCased(headers: Record<string, string>): Record<string, string> {
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  return lower;
}

function headerDigest(headers: Record<string, string>): string {
  return sha256Hex(canonicalJson(lowerCased(headers)));
}

export function createMcpHttpConnector(options: McpHttpConnectorOptions): UpstreamConnector {
  return new McpHttpConnector(options);
}

class McpHttpConnector implements UpstreamConnector {
  readonly transport = 'mcp-http' as const;
  private readonly url: URL;
  private readonly listeners = new Set<() => void>();
  /** Connections of per-owner header sets, least recently used first. */
  private readonly perOwner = new Map<string, McpConnection>();
  private readonly maxPerOwner: number;
  // Every header value sent upstream, the participant's and any owner's seen so far, is kept out of messages.
  private readonly secrets: Set<string>;
  private redact: Redactor;
  private readonly where: CallWhere;
  private readonly main: McpConnection;
  private readonly mainDigest: string;
  private readonly directPool: DirectPool | undefined;
  /** The tools of the last listing that qualify for direct calls. */
  private directTools: ReadonlySet<string> = new Set();

  constructor(private readonly options: McpHttpConnectorOptions) {
    const { participant, logger } = options;
    this.url = new URL(options.url);
    this.maxPerOwner = options.maxCredentialConnections ?? DEFAULT_MAX_CREDENTIAL_CONNECTIONS;
    this.secrets = new Set(Object.values(options.headers ?? {}));
    this.redact = redactorOf(this.secrets);
    this.where = { participant, redact: (t: string) => this.redact(t) };
    this.directPool = directPoolOf(options);
    this.main = this.connectionFor(options.headers ?? {}, () =>
      notifyToolsChanged(this.listeners, logger, participant),
    );
    this.mainDigest = headerDigest(options.headers ?? {});
  }

  private noteSecrets(headers: Record<string, string>): void {
    const before = this.secrets.size;
    for (const v of Object.values(headers)) this.secrets.add(v);
    if (this.secrets.size !== before) this.redact = redactorOf(this.secrets);
  }

  private connectionFor(headers: Record<string, string>, onToolsChanged?: () => void): McpConnection {
    const { options, url } = this;
    return new McpConnection({
      participant: options.participant,
      logger: options.logger,
      clientInfo: options.clientInfo,
      connectTimeoutMs: options.connectTimeoutMs,
      listTimeoutMs: options.listTimeoutMs,
      onToolsChanged,
      ...(this.directPool ? { direct: { ...this.directPool, url, headers: lowerCased(headers) } } : {}),
      makeTransport: () =>
        new StreamableHTTPClientTransport(url, {
          requestInit: { headers: { ...headers } },
          fetch: options.fetch as FetchLike | undefined,
          // A failed stream reconnects on the next request, not in the background.
          reconnectionOptions: {
            maxRetries: 0,
            initialReconnectionDelay: 1000,
            maxReconnectionDelay: 1000,
            reconnectionDelayGrowFactor: 1,
          },
        }),
    });
  }

  /** The participant's connection, or the one of this header set (made, or the most recently used again). */
  private connectionForCall(headers: Record<string, string> | undefined): McpConnection {
    if (headers === undefined) return this.main;
    const digest = headerDigest(headers);
    if (digest === this.mainDigest) return this.main;
    this.noteSecrets(headers);
    let connection = this.perOwner.get(digest);
    if (connection) {
      this.perOwner.delete(digest); // re-inserted last: most recently used
    } else {
      connection = this.connectionFor(headers);
      if (this.perOwner.size >= this.maxPerOwner) {
        const [oldest, evicted] = this.perOwner.entries().next().value as [string, McpConnection];
        this.perOwner.delete(oldest);
        void evicted.close();
      }
    }
    this.perOwner.set(digest, connection);
    return connection;
  }

  async start(): Promise<void> {
    try {
      await this.main.ensure();
    } catch (error) {
      throw this.main.asThrown(error);
    }
  }

  async listTools(): Promise<UpstreamTool[]> {
    const tools = await listThrough(this.main, this.where);
    this.directTools = new Set(tools.filter(callsDirectly).map((t) => t.upstreamName));
    return tools;
  }

  call(upstreamName: string, args: Record<string, unknown>, callOptions: UpstreamCallOptions) {
    const connection = this.connectionForCall(callOptions.headers);
    const direct = this.directTools.has(upstreamName);
    return callThrough(connection, { tool: upstreamName, args, options: callOptions, direct }, this.where);
  }

  onToolsChanged(listener: () => void): void {
    this.listeners.add(listener);
  }

  info(): UpstreamInfo {
    return this.main.info();
  }

  async close(): Promise<void> {
    const all = [this.main, ...this.perOwner.values()];
    this.perOwner.clear();
    await Promise.all(all.map((c) => c.close()));
  }
}
