/**
 * What negotiate's steps share (src/core/conversation-manager.ts and
 * src/core/special-action-handling.ts): their dependencies, the one call
 * that travels through them, the conversation's owner as the caller may use
 * it, and the agent key's ceiling refusal.
 */
import type { ExecutionDeps } from './action-execution';
import type { ApprovalService } from './approvals';
import type { AuditService, NegotiationTrail } from './audit';
import type { OutcomeKeeper } from './idempotency';
import { fail, type NegotiateRequest, type NegotiationResult } from './negotiation';
import type { PermissionService } from './permissions';
import type { ConversationStore, DecisionStore, NegotiationObserver } from './ports';
import { type Principal, canCreate } from './principal';
import type { ToolCatalog } from './tool-catalog';

export interface ConversationManagerDeps extends ExecutionDeps {
  catalog: ToolCatalog;
  decisions: DecisionStore;
  /** Where a level is set (negotiate's `upgrade:`), with its history, settling and audit entry. */
  levels: PermissionService;
  conversations: ConversationStore;
  approvals: ApprovalService;
  /** Without it nothing is audited (tools' own tests, benches of the bare path). */
  audit?: AuditService;
  /** Metrics and traces of each negotiation (src/observability); without it, none. */
  observer?: NegotiationObserver;
}

/** One negotiate call: who asks, where, what, and what travels with it. */
export interface NegotiationCall {
  p: Principal;
  conversationId: string;
  req: NegotiateRequest;
  trail: NegotiationTrail | undefined;
  /** With an Idempotency-Key (src/core/idempotency.ts): only an action that runs uses it. */
  keeper: OutcomeKeeper | undefined;
}

/** The audit entry of a conversation this call created on first use. */
export async function recordCreated(
  deps: ConversationManagerDeps,
  trail: NegotiationTrail | undefined,
  conversationId: string,
): Promise<void> {
  if (!trail) return;
  await deps.audit?.record('conversation.created', {
    conversationId,
    actor: trail.actor,
    requestId: trail.requestId,
    outcome: 'success',
  });
}

/** The conversation's owner as the caller may use it: created for a user or admin (not on a dry run), else read. */
export async function ownerFor(
  deps: ConversationManagerDeps,
  call: NegotiationCall,
  create: boolean,
): Promise<string | null | undefined> {
  const { p, conversationId, trail } = call;
  const { conversations } = deps;
  let owner: string | null | undefined;
  if (create && canCreate(p)) {
    const ensured = await conversations.ensure(conversationId, p.subject);
    owner = ensured.owner;
    if (ensured.created) await recordCreated(deps, trail, conversationId);
  } else {
    owner = await conversations.owner(conversationId);
  }
  // A dry run on a conversation that does not exist yet: a user or admin would create (and own) it.
  return owner === undefined && canCreate(p) ? p.subject : owner;
}

/** An agent key's ceiling refusal: `what` needs `level`, above the key's `maxLevel`. */
export function ceiling(maxLevel: number, what: string, level: number): NegotiationResult {
  return fail(
    'level_ceiling',
    `${what} needs level ${level}, above this agent key's ceiling (maxLevel ${maxLevel}); it cannot run with this key`,
  );
}
