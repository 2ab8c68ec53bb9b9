/**
 * negotiate's outcome codes as HTTP statuses: the one table (API.md,
 * Negotiate). A success is a 200; database trouble never reaches here (it is
 * a problem+json 503 from the error handler).
 */
import type { NegotiationCode, NegotiationResult } from '../core/negotiation';

export const NEGOTIATION_STATUS: Record<NegotiationCode, number> = {
  invalid_args: 400,
  no_tool: 404,
  unknown_tool: 404,
  ambiguous_action: 409,
  permission_required: 403,
  denied: 403,
  level_ceiling: 403,
  resource_not_found: 404,
  resource_exists: 409,
  resource_too_large: 413,
  precondition_failed: 412,
  tool_error: 500,
  approval_not_found: 404,
  approval_mismatch: 409,
  approval_used: 409,
  approval_expired: 403,
  approval_rejected: 403,
  tool_definition_changed: 409,
  participant_unavailable: 503,
  dependency_unmet: 409,
};

export function negotiationStatus(result: NegotiationResult): number {
  return result.code === undefined ? 200 : NEGOTIATION_STATUS[result.code];
}
