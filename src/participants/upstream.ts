/**
 * The contract between a participant (a remote tool, API.md "Participants")
 * and the transport that reaches it. Each transport (mcp-http, mcp-stdio,
 * openapi) implements UpstreamConnector; the participant service
 * (participant-service.ts) turns what a connector lists into a LoadedTool of
 * the registry and calls through it, wrapped in its circuit breaker. A
 * connector knows nothing of conversations, levels or the database.
 */
import { ParticipantCallError } from '../core/remote-action';

export type ParticipantTransport = 'mcp-http' | 'mcp-stdio' | 'openapi';

/** One tool or operation as the upstream defines it. */
export interface UpstreamTool {
  /** The upstream's own name: the MCP tool name; for OpenAPI the operationId, else `METHOD /path`. */
  upstreamName: string;
  title?: string;
  description: string;
  /** JSON Schema of the args, `type: "object"` at the top (OpenAPI: parameters and body merged). */
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  /** The level API.md gives by default: MCP readOnlyHint true → 1, destructiveHint false → 2, else 3; OpenAPI GET/HEAD → 1, DELETE → 3, else 2. */
  defaultLevel: 1 | 2 | 3;
  /**
   * What is pinned (hashed with SHA-256 over canonical JSON): for MCP the
   * name, title, description, input and output schema and annotations as the
   * upstream gave them; for OpenAPI the operation (method, path, the operation object).
   */
  definition: Record<string, unknown>;
}

export interface UpstreamCallOptions {
  /** Aborted when the caller gives up (its timeout): the connector cancels the call upstream. */
  signal: AbortSignal;
  timeoutMs: number;
  /** Headers for this call instead of the participant's (per-owner credentials); mcp-http and openapi only. */
  headers?: Record<string, string>;
}

/**
 * What a call gave. MCP: `{ content, structuredContent? }` as the upstream
 * gave them; OpenAPI: `{ status, body }`. `isError` for an MCP error result or
 * an HTTP 4xx/5xx: the service answers `tool_error` with `errorMessage` (a
 * safe message: never a header or a secret), logging no more than that.
 */
export interface UpstreamCallResult {
  output: Record<string, unknown>;
  isError: boolean;
  errorMessage?: string;
}

/** The upstream cannot be reached (refused, reset, DNS, a crashed child, a refused address): 503 participant_unavailable. */
export class UpstreamUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UpstreamUnavailableError';
  }
}

/** A call past its timeout (or given up by its caller): cancelled upstream; the service answers tool_error. */
export class UpstreamTimeoutError extends ParticipantCallError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UpstreamTimeoutError';
  }
}

export interface UpstreamInfo {
  /** The protocol revision actually spoken (MCP), or the OpenAPI document's `openapi` version. */
  protocolVersion?: string;
  serverInfo?: Record<string, unknown>;
}

export interface UpstreamConnector {
  readonly transport: ParticipantTransport;
  /** Connects (MCP: initialize; stdio: spawns; OpenAPI: loads the document). Throws UpstreamUnavailableError. */
  start(): Promise<void>;
  /** The upstream's tools now (MCP tools/list, all pages; OpenAPI: the document's operations). */
  listTools(): Promise<UpstreamTool[]>;
  /** One call over the connection start() made (no handshake per call). */
  call(upstreamName: string, args: Record<string, unknown>, options: UpstreamCallOptions): Promise<UpstreamCallResult>;
  /** Called when the upstream says its tools changed (MCP notifications/tools/list_changed). */
  onToolsChanged(listener: () => void): void;
  info(): UpstreamInfo;
  /** Stops the connection (stdio: the child, killed after a grace). Idempotent. */
  close(): Promise<void>;
}
