/**
 * A negotiate retry carrying an approval id (API.md, Approvals): whether the
 * approval it names covers this very call, and what the call may then do.
 */
import { argsDigest } from './canonical-json';
import { fail, type NegotiationResult } from './negotiation';
import type { Approval, ApprovalKind } from './ports';

/** The call a retry makes, to compare with the approved one. */
export interface RetriedCall {
  kind: ApprovalKind;
  tool: string;
  action: string;
  args: Record<string, unknown>;
  /** Who retries (actorOf): an approval covers the call of the principal that requested it, no other's. */
  requestedBy: string;
}

/** A retry's verdict: refused (with the result to answer), or allowed to run by consuming a `once` approval. */
export type RetryVerdict =
  | { refusal: NegotiationResult }
  | { once: Approval }
  /** An approval for the conversation: the call is decided by the tool's level, as any other. */
  | { byLevel: true };

/** The verdict on a retry of `call` naming `approvalId`, read as `a` (undefined: no such approval here). */
export function retryVerdict(a: Approval | undefined, approvalId: string, call: RetriedCall): RetryVerdict {
  if (!a) return { refusal: fail('approval_not_found', `Approval not found: ${approvalId.slice(0, 128)}`) };
  if (
    a.kind !== call.kind ||
    a.tool !== call.tool ||
    a.action !== call.action ||
    a.argsDigest !== argsDigest(call.args)
  ) {
    return {
      refusal: fail(
        'approval_mismatch',
        `Approval ${a.id} is for ${a.kind === 'upgrade' ? a.action : `${a.tool}/${a.action}`} with other args (digest ${a.argsDigest.slice(0, 12)}…); it covers exactly that call`,
      ),
    };
  }
  if (a.requestedBy !== call.requestedBy) {
    // Requests are per principal: another caller's approval (its id learnt somehow) covers nothing of this one's.
    return {
      refusal: fail(
        'approval_mismatch',
        `Approval ${a.id} was requested by another caller; it covers that caller's call only`,
      ),
    };
  }
  const lapsed = a.expiresAt !== null && a.expiresAt <= Date.now();
  switch (a.status) {
    case 'used':
      return { refusal: fail('approval_used', `Approval ${a.id} was already used; it covered one run`) };
    case 'rejected':
      return {
        refusal: fail(
          'approval_rejected',
          a.reason ? `Approval ${a.id} was rejected: ${a.reason}` : `Approval ${a.id} was rejected`,
        ),
      };
    case 'expired':
      return { refusal: expired(a) };
    case 'pending':
      if (lapsed) return { refusal: expired(a) };
      return {
        refusal: fail('permission_required', `Approval ${a.id} is still pending`, {
          requiresApproval: true,
          approvalReason: pendingReason(a),
          approval: { id: a.id, status: 'pending', expiresAt: a.expiresAt ?? Date.now() },
        }),
      };
    case 'satisfied':
      // No decision was taken on it: the call is decided by the tool's level, as any other.
      return { byLevel: true };
    case 'approved':
      if (a.scope === 'conversation') return { byLevel: true };
      if (lapsed) return { refusal: expired(a) };
      return { once: a };
  }
}

function expired(a: Approval): NegotiationResult {
  return fail('approval_expired', `Approval ${a.id} expired; a new refusal records a new request`);
}

function pendingReason(a: Approval): string {
  return a.kind === 'upgrade'
    ? `Permission upgrade required: an agent asked ${a.action}; approval ${a.id} awaits the conversation owner.`
    : `Permission upgrade required: ${a.tool} needs level ${a.requiredLevel} for ${a.action}; approval ${a.id} awaits the conversation owner.`;
}
