/** The approvals port and its records (src/core/approvals.ts uses it; src/db/approval-store.ts implements it). */
import type { Level } from '../tool-interface';
import type { Transaction } from './units';

export type ApprovalKind = 'call' | 'upgrade';
/**
 * `satisfied`: a pending request that no longer needs a decision, because the
 * tool's level was raised to the one it asks for (by hand, by an approval for
 * the conversation, by an agent's approved upgrade), or because the same
 * principal's identical call ran at the tool's level.
 */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'used' | 'satisfied';
export type ApprovalScope = 'once' | 'conversation';

export interface Approval {
  id: string;
  conversationId: string;
  kind: ApprovalKind;
  tool: string;
  /** The action's name (`create-resource`), or for kind `upgrade` the special action (`upgrade:TOOL:level-N`). */
  action: string;
  args: Record<string, unknown>;
  argsDigest: string;
  requiredLevel: Level;
  currentLevel: Level;
  requestedBy: string;
  status: ApprovalStatus;
  createdAt: number;
  /** Pending: when the request lapses; approved `once`: until when the retry may come; approved `conversation`: when the grant ends (null: never). */
  expiresAt: number | null;
  /** Who approved or rejected it; for `satisfied`, who raised the level (null: the call ran at its level). */
  decidedBy: string | null;
  /** When it was approved, rejected or satisfied. */
  decidedAt: number | null;
  scope: ApprovalScope | null;
  /** A rejection's reason; for `satisfied`, what made the request unnecessary. */
  reason: string | null;
}

/** What a refusal records: the call, its levels and who asked. */
export type ApprovalRequest = Pick<
  Approval,
  | 'conversationId'
  | 'kind'
  | 'tool'
  | 'action'
  | 'args'
  | 'argsDigest'
  | 'requiredLevel'
  | 'currentLevel'
  | 'requestedBy'
>;

/** An approval as the store records it; for `conversation`, `until` is the grant's end (null: none). */
export type Decision =
  { scope: 'once'; by: string; expiresInSeconds: number } | { scope: 'conversation'; by: string; until: Date | null };

/** What the database decides about an approval it was asked to change. */
export type DecisionOutcome = Approval | 'not_found' | 'not_pending';

/** One principal's identical call, to settle the pending request it left once it ran. */
export type SettledCall = Pick<ApprovalRequest, 'conversationId' | 'tool' | 'action' | 'argsDigest' | 'requestedBy'>;

export interface ApprovalStore {
  /**
   * Records the pending request, or returns the same principal's identical
   * pending one (one statement decides, across replicas).
   */
  request(r: ApprovalRequest, ttlSeconds: number): Promise<Approval>;
  /** undefined when there is no such approval in that conversation. */
  get(conversationId: string, id: string): Promise<Approval | undefined>;
  /** Newest first; undefined when the conversation does not exist. */
  list(conversationId: string, status: ApprovalStatus | undefined, limit: number): Promise<Approval[] | undefined>;
  /** Locks the request in `tx` (until it ends): the approval when it is pending and unexpired. */
  lockPending(conversationId: string, id: string, tx: Transaction): Promise<DecisionOutcome>;
  /** Approves the request lockPending returned, in the same `tx` (an approval for the conversation sets the level in it too). */
  approve(id: string, d: Decision, tx: Transaction): Promise<Approval>;
  reject(conversationId: string, id: string, by: string, reason: string | null): Promise<DecisionOutcome>;
  /** Marks an approved `once` approval used inside `tx` (rolled back with it); false when another retry took it or it lapsed. */
  claim(id: string, tx: Transaction): Promise<boolean>;
  /**
   * Gives a `once` approval claimed by a statement of its own back (`used` →
   * `approved`): a participant's call that never reached its upstream.
   */
  release(id: string): Promise<void>;
  /** Marks that principal's pending request for that call `satisfied` (the call ran without it); how many. */
  satisfy(call: SettledCall): Promise<number>;
  /** Expires lapsed requests (how many); safe on every replica at once. */
  sweep(): Promise<number>;
}

/** One page of the approvals inbox (GET /approvals): newest first, before the cursor. */
export interface InboxQuery {
  /** Only the conversations this subject owns (a user's inbox); absent: all (an admin's). */
  owner?: string;
  status?: ApprovalStatus;
  /** The last approval of the previous page. */
  before?: { createdAt: number; id: string };
  limit: number;
}

/** The inbox across conversations (src/db/approval-store.ts). */
export interface ApprovalInboxStore {
  inbox(q: InboxQuery): Promise<Approval[]>;
}
