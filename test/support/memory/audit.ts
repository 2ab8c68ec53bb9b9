/** The AuditStore port in memory: pending entries, sealed into per-conversation hash chains by entryHash. */
import { GENESIS_HASH, entryHash } from '../../../src/core/audit';
import type { AuditEntry, AuditStore, PendingEntry, Transaction, UnitOfWork } from '../../../src/core/ports';
import { type MemoryDb, MemorySingleUnit, MemoryUnit, txOf } from './db';

export class MemoryAuditStore implements AuditStore {
  private queued: PendingEntry[] = [];

  constructor(private readonly db: MemoryDb) {}

  inTransaction(tx: Transaction, entry: PendingEntry): void {
    const t = txOf(tx)!;
    if (t.single) throw new Error('a single-statement unit carries its entry ahead, not with a COMMIT');
    t.withCommit.push(entry);
  }

  ahead(unit: UnitOfWork, entry: PendingEntry): boolean {
    if (unit instanceof MemoryUnit) {
      if (unit.hasBegun) return false;
      unit.opening.push(entry);
      return true;
    }
    if (unit instanceof MemorySingleUnit) {
      if (unit.hasBegun) return false;
      unit.tx.single!.ahead = entry;
      return true;
    }
    throw new Error('ahead takes a unit made by MemoryUnitsOfWork');
  }

  insert(entry: PendingEntry): Promise<void> {
    this.db.pendingAudit.push(entry);
    return Promise.resolve();
  }

  enqueue(entry: PendingEntry): void {
    this.queued.push(entry);
  }

  flush(): Promise<void> {
    this.db.pendingAudit.push(...this.queued);
    this.queued = [];
    return Promise.resolve();
  }

  seal(): Promise<void> {
    for (const e of this.db.pendingAudit.splice(0)) {
      const prevHash = this.headOf(e.conversationId)?.hash ?? GENESIS_HASH;
      const { event, at, conversationId, actor, outcome, requestId, ...optional } = e;
      const sealed: Omit<AuditEntry, 'hash'> = {
        seq: this.db.sealedAudit.length + 1,
        at,
        conversationId,
        actor,
        event,
        outcome,
        requestId,
        prevHash,
        ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
      };
      this.db.sealedAudit.push({ ...sealed, hash: entryHash(sealed) });
    }
    return Promise.resolve();
  }

  private headOf(conversationId: string): AuditEntry | undefined {
    return this.db.sealedAudit.filter((e) => e.conversationId === conversationId).at(-1);
  }

  page(conversationId: string, after: number, limit: number): Promise<AuditEntry[]> {
    return Promise.resolve(
      this.db.sealedAudit.filter((e) => e.conversationId === conversationId && e.seq > after).slice(0, limit),
    );
  }

  head(conversationId: string): Promise<{ seq: number; hash: string } | undefined> {
    const h = this.headOf(conversationId);
    return Promise.resolve(h && { seq: h.seq, hash: h.hash });
  }

  lastDeletion(conversationId: string): Promise<number> {
    const last = this.db.sealedAudit.filter(
      (e) => e.conversationId === conversationId && e.event === 'conversation.deleted',
    );
    return Promise.resolve(last.at(-1)?.seq ?? 0);
  }

  close(): Promise<void> {
    return this.flush().then(() => this.seal());
  }
}
