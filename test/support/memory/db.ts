/**
 * The rows of the in-memory database, its transactions and units of work
 * (the UnitsOfWork port): a transaction keeps an undo log, rolled back in
 * reverse, and the audit entries sent with its COMMIT; a single-statement
 * unit refuses a second statement and writes its ahead entry only when its
 * one write changed a row (src/db/unit-of-work.ts does the same in SQL).
 */
import type {
  Approval,
  AuditEntry,
  PendingEntry,
  PermissionEventView,
  Transaction,
  UnitOfWork,
  UnitsOfWork,
} from '../../../src/core/ports';
import type { Resource } from '../../../src/core/tool-interface';

// ---- Rows and transactions ------------------------------------------------------------

export interface ConversationRow {
  owner: string | null;
  metadata: Record<string, unknown>;
  /** As stored: read back through readStoredPolicy, as the SQL adapters do. */
  policy: unknown;
  legacyLevel: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface PermissionRow {
  level: number;
  upgradedAt: number;
  expiresAt: number | null;
  revertTo: number | null;
}

/** An open transaction: what to undo on rollback, what to write with its COMMIT. */
export class MemoryTx {
  readonly undo: Array<() => void> = [];
  readonly withCommit: PendingEntry[] = [];
  /** A single-statement unit's handle: one statement, autocommitted. */
  single: { statements: number; ahead: PendingEntry | undefined; rowWritten: boolean } | undefined;
  changed = false;
}

export function txOf(tx: Transaction | undefined): MemoryTx | undefined {
  if (tx === undefined) return undefined;
  if (!(tx instanceof MemoryTx)) throw new Error('a transaction not made by MemoryUnitsOfWork');
  return tx;
}

/** The rows of every table, and the clock the adapters read "now()" from. */
export class MemoryDb {
  readonly conversations = new Map<string, ConversationRow>();
  /** Keyed `conversationId\u0000tool`. */
  readonly permissions = new Map<string, PermissionRow>();
  readonly history: Array<PermissionEventView & { conversationId: string }> = [];
  readonly approvals = new Map<string, Approval>();
  /** Keyed `conversationId\u0000name`. */
  readonly resources = new Map<string, Resource>();
  readonly pendingAudit: PendingEntry[] = [];
  readonly sealedAudit: AuditEntry[] = [];
  private skewMs = 0;

  now(): number {
    return Date.now() + this.skewMs;
  }

  /** Moves the database's clock (lapsing approvals and grants) without touching the process's. */
  advance(ms: number): void {
    this.skewMs += ms;
  }

  /** Writes `value` (undefined: deletes) under `key`, undone when `tx` rolls back. */
  put<K, V>(map: Map<K, V>, key: K, value: V | undefined, tx?: Transaction): void {
    const t = txOf(tx);
    const had = map.has(key);
    const before = map.get(key);
    if (value === undefined) map.delete(key);
    else map.set(key, value);
    if (!t) return;
    t.changed = true;
    if (!t.single) t.undo.push(() => (had ? map.set(key, before as V) : map.delete(key)));
  }

  /** One statement in `tx`: a single-statement unit refuses a second, and writes its ahead entry with a changing first. */
  statement<T>(tx: Transaction | undefined, run: () => T): T {
    const t = txOf(tx);
    if (!t?.single) return run();
    if (t.single.statements++ > 0) {
      throw new Error('An action declared singleWrite sent a second statement; its first has committed');
    }
    const out = run();
    if (t.changed && t.single.ahead) {
      this.pendingAudit.push(t.single.ahead);
      t.single.rowWritten = true;
    }
    return out;
  }
}

export const key = (a: string, b: string): string => `${a}\u0000${b}`;

// ---- Units of work ---------------------------------------------------------------------

export class MemoryUnit implements UnitOfWork {
  private tx: MemoryTx | undefined;
  private finished = false;
  /** Entries written ahead (AuditStore.ahead): with the BEGIN, so they commit with the writes. */
  readonly opening: PendingEntry[] = [];

  constructor(private readonly db: MemoryDb) {}

  get hasBegun(): boolean {
    return this.tx !== undefined || this.finished;
  }

  transaction(): Promise<Transaction> {
    if (this.finished) return Promise.reject(new Error('The action is over; its transaction is closed'));
    this.tx ??= new MemoryTx();
    return Promise.resolve(this.tx as unknown as Transaction);
  }

  begun(): Promise<Transaction> | undefined {
    return this.tx && Promise.resolve(this.tx as unknown as Transaction);
  }

  commit(): Promise<void> {
    this.finished = true;
    if (this.tx) this.db.pendingAudit.push(...this.opening, ...this.tx.withCommit);
    this.tx = undefined;
    return Promise.resolve();
  }

  rollback(): Promise<void> {
    this.finished = true;
    const undo = this.tx?.undo ?? [];
    for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
    this.tx = undefined;
    return Promise.resolve();
  }

  abandon(): Promise<void> {
    return this.rollback();
  }
}

export class MemorySingleUnit implements UnitOfWork {
  readonly tx = new MemoryTx();
  private finished = false;

  constructor() {
    this.tx.single = { statements: 0, ahead: undefined, rowWritten: false };
  }

  get hasBegun(): boolean {
    return this.tx.single!.statements > 0 || this.finished;
  }

  transaction(): Promise<Transaction> {
    if (this.finished) return Promise.reject(new Error('The action is over; its statement is done'));
    return Promise.resolve(this.tx as unknown as Transaction);
  }

  begun(): Promise<Transaction> | undefined {
    return this.tx.single!.rowWritten ? Promise.resolve(this.tx as unknown as Transaction) : undefined;
  }

  commit(): Promise<void> {
    this.finished = true;
    return Promise.resolve();
  }

  rollback(): Promise<void> {
    this.finished = true;
    return Promise.resolve();
  }

  abandon(): Promise<void> {
    return this.rollback();
  }
}

export class MemoryUnitsOfWork implements UnitsOfWork {
  /** How many units were started (a dry run or a refusal starts none). */
  started = 0;

  constructor(private readonly db: MemoryDb) {}

  start(): UnitOfWork {
    this.started++;
    return new MemoryUnit(this.db);
  }

  startSingle(): UnitOfWork {
    this.started++;
    return new MemorySingleUnit();
  }
}

export function newConversation(owner: string | null, now: number): ConversationRow {
  return { owner, metadata: {}, policy: { deny: [] }, legacyLevel: null, createdAt: now, updatedAt: now };
}

/** The explicit level as the decision reads it: a grant past its end is the level before it. */
export function explicitLevelOf(p: PermissionRow | undefined, now: number): number | null {
  if (!p) return null;
  return p.expiresAt !== null && p.expiresAt <= now ? p.revertTo : p.level;
}

/** An approval as the SQL COLUMNS read it: pending or approved `once` past its expiry is `expired`. */
export function asRead(a: Approval, now: number): Approval {
  const lapsed =
    (a.status === 'pending' || a.status === 'approved') &&
    a.scope !== 'conversation' &&
    a.expiresAt !== null &&
    a.expiresAt <= now;
  return lapsed ? { ...a, status: 'expired' } : a;
}
