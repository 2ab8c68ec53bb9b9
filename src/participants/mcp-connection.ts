/**
 * One MCP client connection to an upstream, on the official SDK v2 client:
 * connected once (the 2026-07-28 `server/discover` probe, else the 2025-era
 * `initialize` handshake) and reused by every call; reconnected when the
 * upstream forgot a 2025-era session (HTTP 404 on the session id, or a 400
 * naming the session as SDK 1.x servers answer: the call is retried once),
 * after it could not be reached (the next request initialises anew), or
 * when it was closed. Both transports (mcp-http,
 * mcp-stdio) use it; how a transport is made and what a close means is theirs.
 * An mcp-http connection given a `direct` route sends the tools/call its
 * caller marks `direct` without the SDK client (mcp-direct-call.ts), on what
 * the client negotiated; the rest of the above applies to it the same.
 */
import {
  Client,
  type CallToolResult,
  type Implementation,
  type Tool,
  type Transport,
} from '@modelcontextprotocol/client';
import type { ToolLogger } from '../core/tool-interface';
import { callDirect, type DirectRoute, VIA_SDK, type WireSession } from './mcp-direct-call';
import { classify, type McpFailure, unavailable } from './mcp-errors';
import { type UpstreamInfo, UpstreamTimeoutError } from './upstream';

export const DEFAULT_CLIENT_INFO: Implementation = { name: 'tool-orchestrator', version: '0.1.0' };
// A handshake that takes longer than this is an upstream that is not working.
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
// Listing every page of tools/list; longer is an upstream that is not working (not the SDK's 60 s default).
export const DEFAULT_LIST_TIMEOUT_MS = 30_000;

export interface McpConnectionOptions {
  participant: string;
  /** A fresh transport for each connect. */
  makeTransport: () => Transport;
  clientInfo?: Implementation;
  logger: ToolLogger;
  connectTimeoutMs?: number;
  /** tools/list, all pages. Default 30 s. */
  listTimeoutMs?: number;
  /** Timeout of the 2026-07-28 probe (stdio: silence there means a 2025-era server). */
  probeTimeoutMs?: number;
  /** notifications/tools/list_changed. */
  onToolsChanged?: () => void;
  /** The transport closed without close() being called (a stdio child exited). */
  onUnexpectedClose?: () => void;
  /** An error the transport reported outside any request (a stdio child's non-protocol stdout). */
  onTransportError?: (error: Error) => void;
  /** mcp-http: where a direct tools/call goes (the connection's URL, headers and guarded pool). */
  direct?: DirectRoute;
}

export interface CallOptions {
  signal: AbortSignal;
  timeoutMs: number;
  /** Sent without the SDK client when the connection has a direct route (the tool qualifies: mcp-upstream.ts). */
  direct?: boolean;
}

/** Where a failure is reported from: names the participant, never the SDK's message. */
export class McpConnection {
  private client: Client | undefined;
  private transport: Transport | undefined;
  private connecting: Promise<Client> | undefined;
  private closed = false;
  private lastInfo: UpstreamInfo = {};
  /** Clients dropped because the upstream forgot their session: their calls in flight are retried, not failed. */
  private readonly sessionLost = new WeakSet<Client>();
  /** What each client negotiated, for the direct path; none: that client's calls go through it. */
  private readonly wires = new WeakMap<Client, WireSession>();
  private directIds = 0;

  constructor(private readonly options: McpConnectionOptions) {}

  get participant(): string {
    return this.options.participant;
  }

  /** Connected now (a call would not need a handshake first). */
  get isConnected(): boolean {
    return this.client !== undefined;
  }

  info(): UpstreamInfo {
    return { ...this.lastInfo };
  }

  /** The connected client, connecting first when there is none. Throws UpstreamUnavailableError. */
  ensure(): Promise<Client> {
    if (this.closed) return Promise.reject(unavailable(this.participant, 'closed'));
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private newClient(): Client {
    const onToolsChanged = this.options.onToolsChanged;
    return new Client(this.options.clientInfo ?? DEFAULT_CLIENT_INFO, {
      versionNegotiation: {
        mode: 'auto',
        probe: {
          timeoutMs: this.options.probeTimeoutMs ?? this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        },
      },
      listChanged: onToolsChanged
        ? { tools: { autoRefresh: false, debounceMs: 50, onChanged: () => onToolsChanged() } }
        : undefined,
    });
  }

  private async connect(): Promise<Client> {
    const client = this.newClient();
    const transport = this.options.makeTransport();
    let connected = false;
    client.onerror = (error) => {
      // Errors of requests reach their caller; this is for what arrives outside any (never the message: it may echo secrets).
      if (connected) this.options.onTransportError?.(error);
    };
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.transport = undefined;
      if (!this.closed) this.options.onUnexpectedClose?.();
    };
    try {
      await client.connect(transport, { timeout: this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS });
    } catch (error) {
      await client.close().catch(() => undefined);
      const failure = classify(error, false);
      throw failure.kind === 'unavailable' && failure.error
        ? failure.error
        : unavailable(this.participant, connectReason(failure));
    }
    if (this.closed) {
      await client.close().catch(() => undefined);
      throw unavailable(this.participant, 'closed');
    }
    connected = true;
    this.client = client;
    this.transport = transport;
    const wire = this.options.direct ? wireOf(client, transport) : undefined;
    if (wire) this.wires.set(client, wire);
    const server = client.getServerVersion();
    this.lastInfo = {
      protocolVersion: client.getNegotiatedProtocolVersion(),
      serverInfo: server ? { ...server } : undefined,
    };
    return client;
  }

  /** Drops the current client (the upstream forgot its session, or it broke): the next request reconnects. */
  async reset(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.transport = undefined;
    if (client) await client.close().catch(() => undefined);
  }

  /** Runs a request; a 2025-era upstream that forgot the session gets a new one and the request once more. */
  async request<T>(run: (client: Client) => Promise<T>): Promise<T> {
    const first = await this.ensure();
    const transport = this.transport;
    try {
      return await run(first);
    } catch (error) {
      // Lost with its session: also a call that was in flight on a client another call dropped for that.
      const hadSession = sessionOf(transport) !== undefined;
      const kind = classify(error, hadSession).kind;
      const lost = this.sessionLost.has(first) || kind === 'session-lost';
      if (kind === 'unavailable' && hadSession && !lost && this.client === first) {
        // Not reachable: whatever answers next (a restarted upstream) will not know this session; start a new one then.
        await this.reset();
      }
      if (!lost || this.closed) throw error;
      if (this.client === first) {
        this.options.logger.info(
          { participant: this.participant },
          `Participant ${this.participant}'s upstream forgot its session; initialising again`,
        );
        this.sessionLost.add(first);
        await this.reset();
      }
      return run(await this.ensure());
    }
  }

  /** tools/list, every page (the SDK walks the cursor). */
  async listTools(): Promise<Tool[]> {
    const timeout = this.options.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS;
    const result = await this.request((c) =>
      c.listTools(undefined, { cacheMode: 'refresh', timeout, maxTotalTimeout: timeout }),
    );
    return result.tools;
  }

  /** tools/call; a timeout or an abort cancels the call upstream (the SDK sends notifications/cancelled or aborts its stream). */
  async callTool(name: string, args: Record<string, unknown>, options: CallOptions): Promise<CallToolResult> {
    return this.request<CallToolResult>(async (c) => {
      const wire = options.direct ? this.wires.get(c) : undefined;
      const route = this.options.direct;
      if (wire && route) {
        const id = `direct-${++this.directIds}`;
        const { signal, timeoutMs } = options;
        const result = await callDirect(route, wire, { id, tool: name, args, signal, timeoutMs });
        if (result !== VIA_SDK) return result;
      }
      return c.callTool(
        { name, arguments: args },
        { signal: options.signal, timeout: options.timeoutMs, maxTotalTimeout: options.timeoutMs },
      );
    });
  }

  /** The failure of a list or a call as what the participant service expects thrown. */
  asThrown(error: unknown, reasonIfUnavailable?: string): Error {
    const failure: McpFailure = classify(error, false);
    if (failure.kind === 'timeout')
      return new UpstreamTimeoutError(`Participant ${this.participant} did not answer in time`);
    if (failure.kind === 'unavailable')
      return failure.error ?? unavailable(this.participant, reasonIfUnavailable ?? failure.reason);
    if (failure.kind === 'http') return unavailable(this.participant, `answered HTTP ${failure.status}`);
    if (failure.kind === 'rpc') return unavailable(this.participant, `answered a JSON-RPC error (${failure.code})`);
    return unavailable(this.participant, 'lost its session');
  }

  async close(): Promise<void> {
    this.closed = true;
    const pending = this.connecting;
    await this.reset();
    if (pending) await pending.then((c) => c.close()).catch(() => undefined);
  }
}

function connectReason(failure: McpFailure): string {
  switch (failure.kind) {
    case 'timeout':
      return 'no answer to the handshake in time';
    case 'http':
      return `answered HTTP ${failure.status} to the handshake`;
    case 'rpc':
      return `refused the handshake (JSON-RPC ${failure.code})`;
    case 'unavailable':
      return failure.reason;
    default:
      return 'lost its session';
  }
}

/**
 * What a connected client negotiated, for the direct path; undefined when
 * the SDK does not say (then every call goes through the client). The
 * 2026-07-28 envelope is the client's own (`_outboundMetaEnvelope`, what its
 * requests carry), so it is what the SDK would send, whatever it holds.
 */
function wireOf(client: Client, transport: Transport): WireSession | undefined {
  const era = client.getProtocolEra();
  const protocolVersion = client.getNegotiatedProtocolVersion();
  if (protocolVersion === undefined || (era !== 'modern' && era !== 'legacy')) return undefined;
  const sessionId = sessionOf(transport);
  if (era === 'legacy') return { era, protocolVersion, ...(sessionId !== undefined ? { sessionId } : {}) };
  const envelope = (client as unknown as { _outboundMetaEnvelope?: () => unknown })._outboundMetaEnvelope?.call(client);
  if (typeof envelope !== 'object' || envelope === null) return undefined;
  return { era, protocolVersion, envelope: envelope as Record<string, unknown>, ...(sessionId ? { sessionId } : {}) };
}

function sessionOf(transport: Transport | undefined): string | undefined {
  return (transport as { sessionId?: string } | undefined)?.sessionId;
}
