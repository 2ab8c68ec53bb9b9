/**
 * What the core knows of a participant's action (a remote tool, API.md
 * "Participants"), and the two failures a participant's run throws that
 * negotiate answers in the contract's terms. Never a secret: the adapters in
 * src/participants make every message safe before it gets here.
 */

/** What a run knows of the call beyond the tool context: only participants' actions read it. */
export interface RunCall {
  /** The conversation owner's subject: a participant uses that owner's stored credentials (API.md, per-owner credentials). */
  conversationOwner?: string;
}

/** What the core knows of a participant's action: never a secret. */
export interface RemoteActionInfo {
  participant: string;
  transport: 'mcp-http' | 'mcp-stdio' | 'openapi';
  /** The upstream's own name (MCP tool name, OpenAPI operationId or `METHOD /path`). */
  upstreamName: string;
  /**
   * `quarantined`: its definition changed upstream (or it is new) and an admin
   * has not approved it: hidden from non-admins, never routed, a call answers
   * 409 tool_definition_changed (audited).
   */
  status: 'active' | 'quarantined';
  /** The upstream's host (`server.address` on spans); absent for stdio. */
  address?: string;
  /**
   * The participant's per-call timeout (its `timeoutMs`); negotiate answers
   * tool_error past it and aborts the run's signal (the adapter cancels the
   * upstream request). Absent: TOOL_TIMEOUT_MS.
   */
  timeoutMs?: number;
}

/**
 * Thrown by a participant's action when its upstream cannot be reached or its
 * circuit is open: negotiate answers 503 participant_unavailable with
 * Retry-After, and nothing is written.
 */
export class ParticipantUnavailableError extends Error {
  readonly code = 'participant_unavailable';
  constructor(
    public readonly participant: string,
    /** Whole seconds, at least 1. */
    public readonly retryAfterSeconds: number,
    message = `Participant ${participant} is unavailable`,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ParticipantUnavailableError';
  }
}

/**
 * Thrown by a participant's action when its upstream answered with an error
 * result (MCP `isError`, HTTP 4xx/5xx) or not within its timeout (then
 * cancelled upstream): negotiate answers tool_error with this message, which
 * the transport's adapter makes safe (it names the participant and holds no
 * secret). Any other error a run throws is answered with a generic message.
 */
export class ParticipantCallError extends Error {
  readonly code = 'tool_error';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ParticipantCallError';
  }
}
