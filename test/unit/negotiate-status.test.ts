/**
 * negotiate's outcome codes map to HTTP statuses in one table: every code
 * the domain can return has exactly the status of API.md's Negotiate table.
 */
import { NEGOTIATION_CODES, type NegotiationCode } from '../../src/core/negotiation';
import { NEGOTIATION_STATUS, negotiationStatus } from '../../src/http/negotiate-status';

// API.md, "Negotiate": outcome | status | code.
const API_MD: Record<NegotiationCode, number> = {
  invalid_args: 400,
  no_tool: 404,
  unknown_tool: 404,
  ambiguous_action: 409,
  permission_required: 403,
  denied: 403,
  // Identity and access: an agent key's maxLevel.
  level_ceiling: 403,
  resource_not_found: 404,
  resource_exists: 409,
  resource_too_large: 413,
  // M6 transactions: an operation's stale ifMatch (as REST's precondition_failed).
  precondition_failed: 412,
  tool_error: 500,
  // Approvals: a retry with an approvalId (unknown → 404; the name follows resource_not_found).
  approval_not_found: 404,
  approval_mismatch: 409,
  approval_used: 409,
  approval_expired: 403,
  approval_rejected: 403,
  // Participants: a changed upstream definition; an upstream that cannot be reached.
  tool_definition_changed: 409,
  participant_unavailable: 503,
  // Shared context, M6: an action's declared requires not met.
  dependency_unmet: 409,
};

it('maps every negotiate code, and nothing else, to its API.md status', () => {
  expect(Object.keys(NEGOTIATION_STATUS).sort()).toEqual([...NEGOTIATION_CODES].sort());
  expect(new Set(NEGOTIATION_CODES).size).toBe(NEGOTIATION_CODES.length);
  for (const code of NEGOTIATION_CODES) {
    expect([code, negotiationStatus({ success: false, code })]).toEqual([code, API_MD[code]]);
  }
});

it('answers a success with 200', () => {
  expect(negotiationStatus({ success: true, output: null })).toBe(200);
});
