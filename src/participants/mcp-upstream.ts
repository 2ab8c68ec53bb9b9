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
 */
import { StreamableHTTPClientTransport, type FetchLike, type Implementation } from '@modelcontextprotocol/client';
import { canonicalJson, sha256Hex } from '../core/canonical-json';
import type { ToolLogger } from '../core/tool-interface';
import { callThrough, listThrough } from './mcp-calls';
import { McpConnection } from './mcp-connection';
import { redactorOf } from './redaction';
import type { UpstreamCallOptions, UpstreamConnector, UpstreamInfo } from './upstream';

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
}

const DEFAULT_MAX_CREDENTIAL_CONNECTIONS = 32;

function headerDigest(headers: Record<string, string>): string {
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  return sha256Hex(canonicalJson(lower));
}

export function createMcpHttpConnector(options: McpHttpConnectorOptions): UpstreamConnector {
  const { participant, logger } = options;
  const url = new URL(options.url);
  const listeners = new Set<() => void>();
  const perOwner = new Map<string, McpConnection>();
  const maxPerOwner = options.maxCredentialConnections ?? DEFAULT_MAX_CREDENTIAL_CONNECTIONS;
  // Every header value sent upstream, the participant's and any owner's seen so far, is kept out of messages.
  const secrets = new Set<string>(Object.values(options.headers ?? {}));
  let redact = redactorOf(secrets);
  const noteSecrets = (headers: Record<string, string>): void => {
    const before = secrets.size;
    for (const v of Object.values(headers)) secrets.add(v);
    if (secrets.size !== before) redact = redactorOf(secrets);
  };
  const where = { participant, redact: (t: string) => redact(t) };

  const connectionFor = (headers: Record<string, string>, onToolsChanged?: () => void): McpConnection =>
    new McpConnection({
      participant,
      logger,
      clientInfo: options.clientInfo,
      connectTimeoutMs: options.connectTimeoutMs,
      listTimeoutMs: options.listTimeoutMs,
      onToolsChanged,
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

  const main = connectionFor(options.headers ?? {}, () => {
    for (const l of listeners) {
      try {
        l();
      } catch (error) {
        logger.warn({ participant, err: String((error as Error)?.name) }, 'tools-changed listener threw');
      }
    }
  });
  const mainDigest = headerDigest(options.headers ?? {});

  const connectionForCall = (headers: Record<string, string> | undefined): McpConnection => {
    if (headers === undefined) return main;
    const digest = headerDigest(headers);
    if (digest === mainDigest) return main;
    noteSecrets(headers);
    let connection = perOwner.get(digest);
    if (connection) {
      perOwner.delete(digest); // re-inserted last: most recently used
    } else {
      connection = connectionFor(headers);
      if (perOwner.size >= maxPerOwner) {
        const [oldest, evicted] = perOwner.entries().next().value as [string, McpConnection];
        perOwner.delete(oldest);
        void evicted.close();
      }
    }
    perOwner.set(digest, connection);
    return connection;
  };

  return {
    transport: 'mcp-http',
    async start(): Promise<void> {
      try {
        await main.ensure();
      } catch (error) {
        throw main.asThrown(error);
      }
    },
    listTools: () => listThrough(main, where),
    call: (upstreamName: string, args: Record<string, unknown>, callOptions: UpstreamCallOptions) =>
      callThrough(connectionForCall(callOptions.headers), { tool: upstreamName, args, options: callOptions }, where),
    onToolsChanged(listener: () => void): void {
      listeners.add(listener);
    },
    info: (): UpstreamInfo => main.info(),
    async close(): Promise<void> {
      const all = [main, ...perOwner.values()];
      perOwner.clear();
      await Promise.all(all.map((c) => c.close()));
    },
  };
}
