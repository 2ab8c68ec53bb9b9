/**
 * Approvals (API.md, Approvals): a `permission_required` refusal records a
 * request for exactly that call (tool, action, args digest); the owner
 * approves it once (the retry carrying its id runs once) or for the
 * conversation (the tool's level is raised, optionally for a time), or
 * rejects it. The rules live here; the ApprovalStore port (src/db) keeps
 * every state change a single decision of the database, so replicas and
 * racing retries agree.
 */
import { randomBytes } from 'node:crypto';
import { type RetriedCall, type RetryVerdict, retryVerdict } from './approval-retry';
import { argsDigest } from './canonical-json';
import { inOwnTransaction } from './in-transaction';
import { AppError, conversationNotFound } from './errors';
import { type ApprovalRef, fail, type NegotiationResult } from './negotiation';
import type { AuditService } from './audit';
import type { PermissionService } from './permissions';
import type {
  Approval,
  ApprovalRequest,
  ApprovalScope,
  ApprovalStatus,
  ApprovalStore,
  DecisionOutcome,
  LevelChange,
  Transaction,
  UnitsOfWork,
} from './ports';
import { type Principal, actorOf, checkConversationAccess, forbidden } from './principal';
import type { Level, ToolLogger } from './tool-interface';

export type { RetriedCall, RetryVerdict } from './approval-retry';

export function newApprovalId(): string {
  return 'apr_' + randomBytes(12).toString('base64url');
}

/** What approving changes besides the approval: the level (one home), in a transaction, audited. */
export interface ApprovalServiceDeps {
  levels: PermissionService;
  units: UnitsOfWork;
  /** Without it nothing is audited. */
  audit?: AuditService;
}

export interface ApprovalServiceOptions {
  /** Pending requests lapse after this (APPROVAL_TTL_SECONDS). */
  ttlSeconds: number;
  /** How often this replica sweeps lapsed requests and due grants. */
  sweepIntervalMs?: number;
  logger: ToolLogger;
}

/** How long the list endpoint answers at most (newest first). */
const LIST_LIMIT = 500;

export class ApprovalService {
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(
    private readonly store: ApprovalStore,
    private readonly owners: { owner(id: string): Promise<string | null | undefined> },
    private readonly opts: ApprovalServiceOptions,
    private readonly deps: ApprovalServiceDeps,
  ) {}

  /** Records (or reuses this principal's) request for a refused call and returns what the refusal carries. */
  async record(p: Principal, r: Omit<ApprovalRequest, 'requestedBy' | 'argsDigest'>): Promise<ApprovalRef> {
    const a = await this.store.request(
      { ...r, argsDigest: argsDigest(r.args), requestedBy: actorOf(p) },
      this.opts.ttlSeconds,
    );
    return { id: a.id, status: 'pending', expiresAt: a.expiresAt ?? Date.now() };
  }

  /** What a negotiate retry carrying `approvalId` may do. */
  async checkRetry(conversationId: string, approvalId: string, call: RetriedCall): Promise<RetryVerdict> {
    return retryVerdict(await this.store.get(conversationId, approvalId), approvalId, call);
  }

  /** The approval's status now, read without an access check (a held call of its requester); undefined: none. */
  async statusOf(conversationId: string, approvalId: string): Promise<ApprovalStatus | undefined> {
    return (await this.store.get(conversationId, approvalId))?.status;
  }

  /**
   * After `p`'s call ran (at the tool's level, or under a `once` approval):
   * its own pending request for the identical call, if any, is `satisfied`.
   * Called only when the decision's statement saw one (DecisionContext.waiting).
   */
  async satisfied(
    p: Principal,
    conversationId: string,
    call: { tool: string; action: string; args: Record<string, unknown> },
  ): Promise<void> {
    await this.store.satisfy({
      conversationId,
      tool: call.tool,
      action: call.action,
      argsDigest: argsDigest(call.args),
      requestedBy: actorOf(p),
    });
  }

  /** Consumes an approved `once` approval in the action's transaction: the refusal when another retry took it. */
  claimer(a: Approval): (tx: Transaction) => Promise<NegotiationResult | undefined> {
    return async (tx) =>
      (await this.store.claim(a.id, tx))
        ? undefined
        : fail('approval_used', `Approval ${a.id} was already used; it covered one run`);
  }

  /** Gives a `once` approval claimer() took back: a participant's call that never reached its upstream. */
  releaser(a: Approval): () => Promise<void> {
    return () => this.store.release(a.id);
  }

  /**
   * An agent's retry of an approved `once` upgrade: the approval is used and
   * the level set (history row and audit entry by the approver) in one
   * transaction; undefined when another retry took it or it lapsed.
   */
  claimUpgrade(a: Approval, level: Level): Promise<LevelChange | undefined> {
    return this.inTransaction(async (tx) => {
      if (!(await this.store.claim(a.id, tx))) return undefined;
      const set = await this.deps.levels.setLevel(
        { conversationId: a.conversationId, tool: a.tool, level, by: a.decidedBy ?? 'approval', requestId: '-' },
        tx,
      );
      return { tool: set.tool, level: set.level, previousLevel: set.previousLevel };
    });
  }

  async list(p: Principal, conversationId: string, status?: ApprovalStatus): Promise<Approval[]> {
    await this.checkManage(p, conversationId, 'read approvals');
    const list = await this.store.list(conversationId, status, LIST_LIMIT);
    if (!list) throw conversationNotFound(conversationId);
    return list;
  }

  /** The owner and admins read any; an agent the ones it requested. */
  async get(p: Principal, conversationId: string, approvalId: string): Promise<Approval> {
    if (p.role === 'agent') {
      checkConversationAccess(
        p,
        conversationId,
        await this.owners.owner(conversationId),
        'negotiate',
        'read approvals',
      );
    } else {
      await this.checkManage(p, conversationId, 'read approvals');
    }
    const a = await this.store.get(conversationId, approvalId);
    if (!a) throw approvalNotFound(approvalId);
    if (p.role === 'agent' && a.requestedBy !== actorOf(p)) throw forbidden(p, 'read approvals it did not request');
    return a;
  }

  /**
   * Approves a pending request: `once` lets its retry run once; for the
   * conversation, the tool's level is set in the same transaction (a call's
   * raised, never lowered; an upgrade's set), optionally until
   * `expiresInSeconds`. Its `approval.decided` entry is committed before this resolves.
   */
  async approve(
    p: Principal,
    conversationId: string,
    approvalId: string,
    body: { scope: ApprovalScope; expiresInSeconds?: number },
    requestId: string,
  ): Promise<Approval> {
    await this.checkManage(p, conversationId, 'approve');
    const by = actorOf(p);
    const outcome = await this.inTransaction(async (tx): Promise<DecisionOutcome> => {
      const a = await this.store.lockPending(conversationId, approvalId, tx);
      if (typeof a === 'string') return a;
      if (body.scope === 'once') {
        return this.store.approve(
          a.id,
          { scope: 'once', by, expiresInSeconds: body.expiresInSeconds ?? this.opts.ttlSeconds },
          tx,
        );
      }
      const until = body.expiresInSeconds === undefined ? null : new Date(Date.now() + body.expiresInSeconds * 1000);
      await this.deps.levels.setLevel(
        {
          conversationId: a.conversationId,
          tool: a.tool,
          level: a.requiredLevel,
          by,
          // The change's entry is the approval's consequence, not a request of its own.
          requestId: '-',
          raiseOnly: a.kind === 'call',
          ...(until ? { expiresAt: until } : {}),
          decides: a.id,
        },
        tx,
      );
      return this.store.approve(a.id, { scope: 'conversation', by, until }, tx);
    });
    const approval = decided(outcome, approvalId);
    await this.audited(p, approval, `approved:${body.scope}`, requestId);
    return approval;
  }

  async reject(
    p: Principal,
    conversationId: string,
    approvalId: string,
    reason: string | undefined,
    requestId: string,
  ): Promise<Approval> {
    await this.checkManage(p, conversationId, 'reject');
    const approval = decided(
      await this.store.reject(conversationId, approvalId, actorOf(p), reason ?? null),
      approvalId,
    );
    await this.audited(p, approval, 'rejected', requestId);
    return approval;
  }

  /** The decision's audit entry (committed before the answer). */
  private async audited(p: Principal, a: Approval, outcome: string, requestId: string): Promise<void> {
    await this.deps.audit?.changed(p, 'approval.decided', a.conversationId, requestId, {
      approvalId: a.id,
      tool: a.tool,
      action: a.action,
      argsDigest: a.argsDigest,
      outcome,
    });
  }

  /** `work` in a transaction of its own: committed when it resolves, rolled back when it throws. */
  private inTransaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    return inOwnTransaction(this.deps.units, work);
  }

  /** Agents see the conversation but never manage approvals (403); others who may not see it get 404. */
  private async checkManage(p: Principal, conversationId: string, what: string): Promise<void> {
    if (p.role === 'agent' && p.conversationId !== conversationId) throw conversationNotFound(conversationId);
    const owner = await this.owners.owner(conversationId);
    checkConversationAccess(p, conversationId, owner, 'manage', what);
  }

  /** Every replica sweeps each second; SKIP LOCKED in the store lets one apply each due row. */
  startSweeper(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweepOnce(), this.opts.sweepIntervalMs ?? 1000);
    this.timer.unref();
  }

  stopSweeper(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async sweepOnce(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      // Grants first: a level returning and a request lapsing are independent, as they were in one statement each.
      const reverted = await this.deps.levels.endDueGrants();
      const expired = await this.store.sweep();
      if (reverted > 0) this.opts.logger.info({ expired, reverted }, 'approvals: time-limited grants ended');
    } catch (err) {
      // The database may be down for a moment: the next tick tries again, and the decision honours expiries meanwhile.
      this.opts.logger.warn({ err }, 'approvals: sweep failed');
    } finally {
      this.sweeping = false;
    }
  }
}

function approvalNotFound(id: string): AppError {
  return new AppError('not_found', `Approval not found: ${id.slice(0, 128)}`);
}

function decided(outcome: DecisionOutcome, approvalId: string): Approval {
  if (outcome === 'not_found') throw approvalNotFound(approvalId);
  if (outcome === 'not_pending') {
    throw new AppError(
      'conflict',
      `Approval ${approvalId} is not pending: only a pending request can be approved or rejected`,
    );
  }
  return outcome;
}
