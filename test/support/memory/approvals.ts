/** The ApprovalStore port in memory: the steps of src/db/approval-store.ts's statements. */
import { newApprovalId } from '../../../src/core/approvals';
import type {
  Approval,
  ApprovalRequest,
  ApprovalStatus,
  ApprovalStore,
  Decision,
  DecisionOutcome,
  SettledCall,
  Transaction,
} from '../../../src/core/ports';
import { type MemoryDb, asRead } from './db';

export class MemoryApprovalStore implements ApprovalStore {
  constructor(private readonly db: MemoryDb) {}

  /** REQUEST: the same principal's identical pending call is reused, unless it lapsed (then it expires first). */
  request(r: ApprovalRequest, ttlSeconds: number): Promise<Approval> {
    const { db } = this;
    const now = db.now();
    const same = [...db.approvals.values()].find(
      (a) =>
        a.status === 'pending' &&
        a.conversationId === r.conversationId &&
        a.kind === r.kind &&
        a.tool === r.tool &&
        a.action === r.action &&
        a.requestedBy === r.requestedBy &&
        a.argsDigest === r.argsDigest,
    );
    if (same && (same.expiresAt ?? Infinity) > now) return Promise.resolve(same);
    if (same) db.put(db.approvals, same.id, { ...same, status: 'expired' });
    const a: Approval = {
      ...r,
      id: newApprovalId(),
      status: 'pending',
      createdAt: now,
      expiresAt: now + ttlSeconds * 1000,
      decidedBy: null,
      decidedAt: null,
      scope: null,
      reason: null,
    };
    db.put(db.approvals, a.id, a);
    return Promise.resolve(a);
  }

  get(conversationId: string, id: string): Promise<Approval | undefined> {
    const a = this.db.approvals.get(id);
    return Promise.resolve(a && a.conversationId === conversationId ? asRead(a, this.db.now()) : undefined);
  }

  list(conversationId: string, status: ApprovalStatus | undefined, limit: number): Promise<Approval[] | undefined> {
    if (!this.db.conversations.has(conversationId)) return Promise.resolve(undefined);
    const now = this.db.now();
    const all = [...this.db.approvals.values()]
      .filter((a) => a.conversationId === conversationId)
      .map((a) => asRead(a, now))
      .filter((a) => status === undefined || a.status === status)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
    return Promise.resolve(all.slice(0, limit));
  }

  lockPending(conversationId: string, id: string, _tx: Transaction): Promise<DecisionOutcome> {
    return Promise.resolve(this.pending(conversationId, id));
  }

  private pending(conversationId: string, id: string): DecisionOutcome {
    const a = this.db.approvals.get(id);
    if (!a || a.conversationId !== conversationId) return 'not_found';
    const read = asRead(a, this.db.now());
    return read.status === 'pending' ? read : 'not_pending';
  }

  approve(id: string, d: Decision, tx: Transaction): Promise<Approval> {
    const a = this.db.approvals.get(id)!;
    const now = this.db.now();
    const decided: Approval =
      d.scope === 'once'
        ? {
            ...a,
            status: 'approved',
            scope: 'once',
            decidedBy: d.by,
            decidedAt: now,
            expiresAt: now + d.expiresInSeconds * 1000,
          }
        : {
            ...a,
            status: 'approved',
            scope: 'conversation',
            decidedBy: d.by,
            decidedAt: now,
            expiresAt: d.until?.getTime() ?? null,
          };
    this.db.put(this.db.approvals, id, decided, tx);
    return Promise.resolve(asRead(decided, now));
  }

  reject(conversationId: string, id: string, by: string, reason: string | null): Promise<DecisionOutcome> {
    const a = this.pending(conversationId, id);
    if (typeof a === 'string') return Promise.resolve(a);
    const rejected: Approval = { ...a, status: 'rejected', decidedBy: by, decidedAt: this.db.now(), reason };
    this.db.put(this.db.approvals, id, rejected);
    return Promise.resolve(rejected);
  }

  /** UPDATE … SET status = 'used' WHERE status = 'approved' AND scope = 'once' AND expires_at > now(). */
  release(id: string): Promise<void> {
    const a = this.db.approvals.get(id);
    if (a?.status === 'used') this.db.approvals.set(id, { ...a, status: 'approved' });
    return Promise.resolve();
  }

  claim(id: string, tx: Transaction): Promise<boolean> {
    return Promise.resolve(
      this.db.statement(tx, () => {
        const a = this.db.approvals.get(id);
        if (!a || a.status !== 'approved' || a.scope !== 'once' || (a.expiresAt ?? -Infinity) <= this.db.now()) {
          return false;
        }
        this.db.put(this.db.approvals, id, { ...a, status: 'used' }, tx);
        return true;
      }),
    );
  }

  satisfy(call: SettledCall): Promise<number> {
    const now = this.db.now();
    let n = 0;
    for (const a of [...this.db.approvals.values()]) {
      if (
        a.conversationId === call.conversationId &&
        a.kind === 'call' &&
        a.tool === call.tool &&
        a.action === call.action &&
        a.requestedBy === call.requestedBy &&
        a.argsDigest === call.argsDigest &&
        a.status === 'pending' &&
        (a.expiresAt ?? Infinity) > now
      ) {
        const reason = "The same call ran at the tool's level";
        this.db.put(this.db.approvals, a.id, { ...a, status: 'satisfied', decidedAt: now, reason });
        n++;
      }
    }
    return Promise.resolve(n);
  }

  sweep(): Promise<number> {
    const now = this.db.now();
    let n = 0;
    for (const a of [...this.db.approvals.values()]) {
      if (asRead(a, now).status === 'expired' && a.status !== 'expired') {
        this.db.put(this.db.approvals, a.id, { ...a, status: 'expired' });
        n++;
      }
    }
    return Promise.resolve(n);
  }
}
