/**
 * negotiate's request and outcome. An outcome carries a machine-readable
 * code and no transport status: REST (src/http/negotiate-status.ts) and MCP
 * each map codes to their own answers.
 */
import type { Alignment } from './tool-interface';

/** The approval request a permission_required refusal recorded (API.md, Approvals). */
export interface ApprovalRef {
  id: string;
  status: 'pending';
  /**
   * Epoch milliseconds: the request lapses then.
   * @isLong
   */
  expiresAt: number;
}

export interface NegotiateRequest {
  action: string;
  args?: Record<string, unknown>;
  tool?: string;
  dryRun?: boolean;
  /** The approval a retry of a refused call runs under (API.md, Approvals). */
  approvalId?: string;
  /** A resource name: the call's result is written there in the shared context (API.md, Participants). */
  saveAs?: string;
}

export interface Routing {
  tool: string;
  action: string;
  /** 1.0 for an exact match; approximate matches are lower. */
  confidence: number;
  /** true when the tool was named (qualified action or `tool`). */
  explicit: boolean;
}

/** Every code a failed negotiation can carry. */
export const NEGOTIATION_CODES = [
  'invalid_args',
  'no_tool',
  'unknown_tool',
  'ambiguous_action',
  'permission_required',
  'denied',
  'level_ceiling',
  'resource_not_found',
  'resource_exists',
  'resource_too_large',
  // A transaction's operation with a stale ifMatch (M6, data-tool/apply-batch).
  'precondition_failed',
  'tool_error',
  // Approvals: a retry carrying an approvalId.
  'approval_not_found',
  'approval_mismatch',
  'approval_used',
  'approval_expired',
  'approval_rejected',
  // Participants (remote tools, API.md "Participants").
  'tool_definition_changed',
  'participant_unavailable',
  // Tool dependencies (API.md, "Shared context, M6"): an action's declared requires not met.
  'dependency_unmet',
] as const;
/** Why a negotiation failed, machine-readable (API.md, Negotiate). */
export type NegotiationCode = (typeof NEGOTIATION_CODES)[number];

export interface NegotiationResult {
  success: boolean;
  /** The action's output; on `no_tool` `{suggestions}`, on `ambiguous_action` `{candidates}`. */
  output?: unknown;
  /** Human-readable, safe to show. */
  error?: string;
  /** Machine-readable, on failure only. */
  code?: NegotiationCode;
  requiresApproval?: boolean;
  approvalReason?: string;
  /** On permission_required: the approval request recorded for exactly this call. */
  approval?: ApprovalRef;
  alignment?: Alignment;
  routing?: Routing;
  /** On participant_unavailable: seconds until a retry may succeed (REST's Retry-After header). */
  retryAfterSeconds?: number;
}

/** A failed negotiation. */
export function fail(code: NegotiationCode, error: string, extra: Partial<NegotiationResult> = {}): NegotiationResult {
  return { success: false, error, code, ...extra };
}
