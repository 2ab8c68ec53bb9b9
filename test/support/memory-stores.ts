/**
 * The core's ports in memory, for fast unit tests of its decisions (no
 * database, no HTTP): each adapter does in memory the steps its SQL
 * counterpart in src/db does in its statements (the same conditions, the
 * same "expired when lapsed" reading of approvals, the same settling on a
 * level change). A transaction keeps an undo log (rolled back in reverse)
 * and the audit entries that go with its COMMIT; a single-statement unit
 * refuses a second statement and writes its ahead entry only when its one
 * write changed a row. Tests run one call at a time: row locks and races,
 * which the database decides, are the HTTP and db suites' subject, not this.
 */
import { ApprovalService, newApprovalId } from '../../src/core/approvals';
import { AuditService, GENESIS_HASH, entryHash } from '../../src/core/audit';
import { ConversationAccess } from '../../src/core/access';
import { ConversationManager } from '../../src/core/conversation-manager';
import { RESERVED_CONVERSATION_ID, conversationNotFound, reservedIdError } from '../../src/core/errors';
import { PermissionService, effectiveLevel } from '../../src/core/permissions';
import { readStoredPolicy, type TPolicy } from '../../src/core/policy';
import type {
  Approval,
  ApprovalRequest,
  ApprovalStatus,
  ApprovalStore,
  AuditEntry,
  AuditStore,
  ConversationStore,
  ConversationView,
  Decision,
  DecisionContext,
  DecisionOutcome,
  DecisionStore,
  ListResourcesOptions,
  PendingEntry,
  PermissionEventView,
  PermissionStore,
  ResourceStore,
  SettledCall,
  StoredLevelChange,
  StoredLevels,
  StoredLevelSetting,
  Transaction,
  UnitOfWork,
  UnitsOfWork,
  VersionCondition,
} from '../../src/core/ports';
import { ResourceService } from '../../src/core/resource-service';
import { ToolCatalog } from '../../src/core/tool-catalog';
import type { Level, Resource, ToolLogger } from '../../src/core/tool-interface';
import { ToolRegistry } from '../../src/core/tool-registry';
import { negotiationStatus } from '../../src/http/negotiate-status';

// ---- Rows and transactions ------------------------------------------------------------

interface ConversationRow {
  owner: string | null;
  metadata: Record<string, unknown>;
  /** As stored: read back through readStoredPolicy, as the SQL adapters do. */
  policy: unknown;
  legacyLevel: number | null;
  createdAt: number;
  updatedAt: number;
}

interface PermissionRow {
  level: number;
  upgradedAt: number;
  expiresAt: number | null;
  revertTo: number | null;
}

/** An open transaction: what to undo on rollback, what to write with its COMMIT. */
class MemoryTx {
  readonly undo: Array<() => void> = [];
  readonly withCommit: PendingEntry[] = [];
  /** A single-statement unit's handle: one statement, autocommitted. */
  single: { statements: number; ahead: PendingEntry | undefined; rowWritten: boolean } | undefined;
  changed = false;
}

function txOf(tx: Transaction | undefined): MemoryTx | undefined {
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

const key = (a: string, b: string): string => `${a}\u0000${b}`;

// ---- Units of work ---------------------------------------------------------------------

class MemoryUnit implements UnitOfWork {
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

class MemorySingleUnit implements UnitOfWork {
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

// ---- Stores ----------------------------------------------------------------------------

export class MemoryConversationStore implements ConversationStore {
  constructor(private readonly db: MemoryDb) {}

  private view(id: string, r: ConversationRow): ConversationView {
    return { id, owner: r.owner, metadata: r.metadata, policy: readStoredPolicy(r.policy).policy, ...pick(r) };
  }

  create(
    id: string,
    metadata: Record<string, unknown>,
    policy: TPolicy,
    owner: string | null,
  ): Promise<ConversationView | undefined> {
    if (id === RESERVED_CONVERSATION_ID) throw reservedIdError();
    if (this.db.conversations.has(id)) return Promise.resolve(undefined);
    const now = this.db.now();
    const row: ConversationRow = { owner, metadata, policy, legacyLevel: null, createdAt: now, updatedAt: now };
    this.db.put(this.db.conversations, id, row);
    return Promise.resolve(this.view(id, row));
  }

  get(id: string): Promise<ConversationView | undefined> {
    const r = this.db.conversations.get(id);
    return Promise.resolve(r && this.view(id, r));
  }

  list(opts: { owner?: string; after?: string; limit: number }): Promise<ConversationView[]> {
    const ids = [...this.db.conversations.keys()].sort();
    const out = ids
      .filter((id) => opts.after === undefined || id > opts.after)
      .map((id) => this.view(id, this.db.conversations.get(id)!))
      .filter((v) => opts.owner === undefined || v.owner === opts.owner);
    return Promise.resolve(out.slice(0, opts.limit));
  }

  /** Its resources, permissions and history go with it (the SQL cascade). */
  delete(id: string): Promise<boolean> {
    if (!this.db.conversations.delete(id)) return Promise.resolve(false);
    for (const map of [this.db.resources, this.db.permissions] as Array<Map<string, unknown>>) {
      for (const k of [...map.keys()]) if (k.startsWith(id + '\u0000')) map.delete(k);
    }
    for (const [aid, a] of [...this.db.approvals]) if (a.conversationId === id) this.db.approvals.delete(aid);
    return Promise.resolve(true);
  }

  exists(id: string): Promise<boolean> {
    return Promise.resolve(this.db.conversations.has(id));
  }

  owner(id: string): Promise<string | null | undefined> {
    return Promise.resolve(this.db.conversations.get(id)?.owner);
  }

  ensure(id: string, owner: string): Promise<{ owner: string | null; created: boolean }> {
    if (id === RESERVED_CONVERSATION_ID) throw reservedIdError();
    const existing = this.db.conversations.get(id);
    if (existing) return Promise.resolve({ owner: existing.owner, created: false });
    const now = this.db.now();
    this.db.put(this.db.conversations, id, newConversation(owner, now));
    return Promise.resolve({ owner, created: true });
  }
}

function pick(r: ConversationRow): Pick<ConversationView, 'legacyLevel' | 'createdAt' | 'updatedAt'> {
  return { legacyLevel: r.legacyLevel, createdAt: r.createdAt, updatedAt: r.updatedAt };
}

function newConversation(owner: string | null, now: number): ConversationRow {
  return { owner, metadata: {}, policy: { deny: [] }, legacyLevel: null, createdAt: now, updatedAt: now };
}

/** The explicit level as the decision reads it: a grant past its end is the level before it. */
function explicitLevelOf(p: PermissionRow | undefined, now: number): number | null {
  if (!p) return null;
  return p.expiresAt !== null && p.expiresAt <= now ? p.revertTo : p.level;
}

/** An approval as the SQL COLUMNS read it: pending or approved `once` past its expiry is `expired`. */
function asRead(a: Approval, now: number): Approval {
  const lapsed =
    (a.status === 'pending' || a.status === 'approved') &&
    a.scope !== 'conversation' &&
    a.expiresAt !== null &&
    a.expiresAt <= now;
  return lapsed ? { ...a, status: 'expired' } : a;
}

export class MemoryDecisionStore implements DecisionStore {
  constructor(private readonly db: MemoryDb) {}

  /** The steps of DECISION_SELECT(_PREFETCH), then DECISION_CREATE for an unknown conversation. */
  load(
    conversationId: string,
    tool: string,
    createOwner: string | undefined,
    prefetch?: string,
    waitingFor?: { action: string; requestedBy: string },
  ): Promise<DecisionContext> {
    const now = this.db.now();
    let row = this.db.conversations.get(conversationId);
    let created = false;
    const prefetched =
      row && prefetch !== undefined
        ? { name: prefetch, resource: this.db.resources.get(key(conversationId, prefetch)) ?? null }
        : undefined;
    if (!row && createOwner !== undefined) {
      if (conversationId === RESERVED_CONVERSATION_ID) throw reservedIdError();
      row = newConversation(createOwner, now);
      this.db.put(this.db.conversations, conversationId, row);
      created = true;
    }
    if (!row) return Promise.resolve({ exists: false, legacyLevel: null, policy: { deny: [] }, explicitLevel: null });
    const { policy, problem } = readStoredPolicy(row.policy);
    // Only the first statement (a conversation that existed) asks; the prefetching one never does.
    const waiting =
      !created &&
      prefetch === undefined &&
      waitingFor !== undefined &&
      [...this.db.approvals.values()].some(
        (a) =>
          a.conversationId === conversationId &&
          a.kind === 'call' &&
          a.tool === tool &&
          a.action === waitingFor.action &&
          a.requestedBy === waitingFor.requestedBy &&
          a.status === 'pending' &&
          (a.expiresAt ?? Infinity) > now,
      );
    return Promise.resolve({
      exists: true,
      ...(created ? { created: true } : {}),
      owner: row.owner,
      legacyLevel: row.legacyLevel,
      policy,
      ...(problem ? { policyProblem: problem } : {}),
      explicitLevel: explicitLevelOf(this.db.permissions.get(key(conversationId, tool)), now),
      ...(prefetched ? { prefetched } : {}),
      ...(waiting ? { waiting: true } : {}),
    });
  }
}

export class MemoryPermissionStore implements PermissionStore {
  constructor(private readonly db: MemoryDb) {}

  setLevel(s: StoredLevelSetting, tx: Transaction): Promise<StoredLevelChange | undefined> {
    if (s.conversationId === RESERVED_CONVERSATION_ID) throw reservedIdError();
    return Promise.resolve(s.kind === 'set' ? this.set(s, tx) : this.expire(s, tx));
  }

  /** ENSURE_AND_LOCK (or LOCK), CURRENT, WRITE, HISTORY, TOUCH, SETTLE. */
  private set(s: Extract<StoredLevelSetting, { kind: 'set' }>, tx: Transaction): StoredLevelChange {
    const { db } = this;
    const { conversationId, tool, level, actor } = s;
    const now = db.now();
    let conv = db.conversations.get(conversationId);
    let conversationCreated = false;
    if (!conv && s.createOwner !== undefined) {
      conv = newConversation(s.createOwner, now);
      db.put(db.conversations, conversationId, conv, tx);
      conversationCreated = true;
    }
    if (!conv || (s.requiredOwner !== undefined && conv.owner !== s.requiredOwner)) {
      throw conversationNotFound(conversationId);
    }
    const row = db.permissions.get(key(conversationId, tool));
    const lapsed = row !== undefined && row.expiresAt !== null && row.expiresAt <= now;
    const explicitNow = row ? (lapsed ? row.revertTo : row.level) : null;
    const beforeGrant = row && row.expiresAt !== null && !lapsed ? row.revertTo : explicitNow;
    const previousLevel = effectiveLevel(explicitNow, conv.legacyLevel).level;
    if (s.raiseOnly && previousLevel >= level) {
      return { change: { tool, level: previousLevel, previousLevel }, changed: false, conversationCreated };
    }
    const until = s.until?.getTime() ?? null;
    db.put(
      db.permissions,
      key(conversationId, tool),
      { level, upgradedAt: now, expiresAt: until, revertTo: until !== null ? beforeGrant : null },
      tx,
    );
    this.addHistory({ conversationId, tool, fromLevel: previousLevel, toLevel: level, at: now, actor }, tx);
    db.put(db.conversations, conversationId, { ...conv, updatedAt: now }, tx);
    for (const a of [...db.approvals.values()]) {
      if (
        a.conversationId === conversationId &&
        a.tool === tool &&
        a.status === 'pending' &&
        a.requiredLevel <= level &&
        (a.expiresAt ?? Infinity) > now &&
        a.id !== s.settleExcept
      ) {
        const reason = `The tool's level was set to ${level} by ${actor}`;
        db.put(db.approvals, a.id, { ...a, status: 'satisfied', decidedBy: actor, decidedAt: now, reason }, tx);
      }
    }
    return { change: { tool, level, previousLevel }, changed: true, conversationCreated };
  }

  private expire(s: Extract<StoredLevelSetting, { kind: 'expire' }>, tx: Transaction): StoredLevelChange | undefined {
    const { db } = this;
    const conv = db.conversations.get(s.conversationId);
    if (!conv) return undefined;
    const k = key(s.conversationId, s.tool);
    const row = db.permissions.get(k);
    const now = db.now();
    if (!row || row.expiresAt === null || row.expiresAt > now) return undefined;
    const level = (row.revertTo ?? conv.legacyLevel ?? 1) as Level;
    db.put(
      db.permissions,
      k,
      row.revertTo !== null ? { level, upgradedAt: now, expiresAt: null, revertTo: null } : undefined,
      tx,
    );
    this.addHistory(
      {
        conversationId: s.conversationId,
        tool: s.tool,
        fromLevel: row.level,
        toLevel: level,
        at: now,
        actor: 'expiry',
      },
      tx,
    );
    return {
      change: { tool: s.tool, level, previousLevel: row.level as Level },
      changed: true,
      conversationCreated: false,
    };
  }

  private addHistory(e: PermissionEventView & { conversationId: string }, tx: Transaction): void {
    this.db.history.push(e);
    const t = txOf(tx)!;
    t.changed = true;
    t.undo.push(() => void this.db.history.splice(this.db.history.indexOf(e), 1));
  }

  dueGrants(limit: number): Promise<Array<{ conversationId: string; tool: string }>> {
    const now = this.db.now();
    const due = [...this.db.permissions.entries()]
      .filter(([, p]) => p.expiresAt !== null && p.expiresAt <= now)
      .sort(([, a], [, b]) => a.expiresAt! - b.expiresAt!)
      .slice(0, limit)
      .map(([k]) => {
        const [conversationId, tool] = k.split('\u0000') as [string, string];
        return { conversationId, tool };
      });
    return Promise.resolve(due);
  }

  levels(conversationId: string): Promise<StoredLevels | undefined> {
    const conv = this.db.conversations.get(conversationId);
    if (!conv) return Promise.resolve(undefined);
    const now = this.db.now();
    const explicit = [...this.db.permissions.entries()].flatMap(([k, p]) => {
      const [cid, tool] = k.split('\u0000') as [string, string];
      const level = cid === conversationId ? explicitLevelOf(p, now) : null;
      return level === null ? [] : [{ tool, level, upgradedAt: new Date(p.upgradedAt) }];
    });
    return Promise.resolve({ legacyLevel: conv.legacyLevel, explicit });
  }

  history(conversationId: string): Promise<PermissionEventView[] | undefined> {
    if (!this.db.conversations.has(conversationId)) return Promise.resolve(undefined);
    return Promise.resolve(
      this.db.history.filter((e) => e.conversationId === conversationId).map(({ conversationId: _c, ...e }) => e),
    );
  }
}

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

export class MemoryResourceStore implements ResourceStore {
  constructor(private readonly db: MemoryDb) {}

  get(conversationId: string, name: string, tx?: Transaction): Promise<Resource | undefined> {
    return Promise.resolve(this.db.statement(tx, () => this.db.resources.get(key(conversationId, name))));
  }

  getForUpdate(conversationId: string, name: string, tx: Transaction): Promise<Resource | undefined> {
    return this.get(conversationId, name, tx);
  }

  create(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    tx?: Transaction,
  ): Promise<Resource | undefined> {
    return Promise.resolve(
      this.db.statement(tx, () => {
        if (!this.db.conversations.has(conversationId)) throw conversationNotFound(conversationId);
        if (this.db.resources.has(key(conversationId, name))) return undefined;
        const now = this.db.now();
        const r: Resource = {
          name,
          data: JSON.parse(json),
          createdBy: by,
          updatedBy: by,
          createdAt: now,
          updatedAt: now,
          version: 1,
        };
        this.db.put(this.db.resources, key(conversationId, name), r, tx);
        return r;
      }),
    );
  }

  update(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    versions?: VersionCondition,
    tx?: Transaction,
  ): Promise<Resource | undefined> {
    return Promise.resolve(
      this.db.statement(tx, () => {
        const r = this.db.resources.get(key(conversationId, name));
        if (!r || !allowed(r.version, versions)) return undefined;
        const next = { ...r, data: JSON.parse(json), updatedBy: by, updatedAt: this.db.now(), version: r.version + 1 };
        this.db.put(this.db.resources, key(conversationId, name), next, tx);
        return next;
      }),
    );
  }

  async upsert(
    conversationId: string,
    name: string,
    json: string,
    by: string,
    notIn?: number[],
  ): Promise<{ resource: Resource; created: boolean } | undefined> {
    const created = await this.create(conversationId, name, json, by);
    if (created) return { resource: created, created: true };
    const updated = await this.update(conversationId, name, json, by, notIn ? { notIn } : undefined);
    return updated && { resource: updated, created: false };
  }

  delete(conversationId: string, name: string, expectedVersions?: number[], tx?: Transaction): Promise<boolean> {
    return Promise.resolve(
      this.db.statement(tx, () => {
        const r = this.db.resources.get(key(conversationId, name));
        if (!r || !allowed(r.version, expectedVersions ? { in: expectedVersions } : undefined)) return false;
        this.db.put(this.db.resources, key(conversationId, name), undefined, tx);
        return true;
      }),
    );
  }

  list(conversationId: string, opts: ListResourcesOptions, tx?: Transaction): Promise<Resource[]> {
    return Promise.resolve(
      this.db.statement(tx, () =>
        [...this.db.resources.entries()]
          .filter(([k]) => k.startsWith(conversationId + '\u0000'))
          .map(([, r]) => r)
          .filter((r) => opts.prefix === undefined || r.name.startsWith(opts.prefix))
          .filter((r) => opts.createdBy === undefined || r.createdBy === opts.createdBy)
          .filter((r) => opts.after === undefined || Buffer.compare(Buffer.from(r.name), Buffer.from(opts.after)) > 0)
          .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)))
          .slice(0, opts.limit ?? 100),
      ),
    );
  }
}

function allowed(version: number, v: VersionCondition | undefined): boolean {
  if (!v) return true;
  if (v.in && !v.in.includes(version)) return false;
  return !(v.notIn && v.notIn.includes(version));
}

/** Pending entries, sealed into per-conversation hash chains by entryHash (as the database's sealer). */
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

// ---- Wiring ----------------------------------------------------------------------------

export const silentLogger: ToolLogger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export interface MemoryCore {
  db: MemoryDb;
  units: MemoryUnitsOfWork;
  auditStore: MemoryAuditStore;
  manager: ConversationManager;
  approvals: ApprovalService;
  permissions: PermissionService;
  audit: AuditService;
  catalog: ToolCatalog;
  registry: ToolRegistry;
}

/**
 * The domain services as src/bootstrap.ts wires them, over the stores above
 * and the bundled tools (a registry given is loaded once and shared: the
 * caller closes it).
 */
export async function memoryCore(
  opts: { approvalTtlSeconds?: number; toolTimeoutMs?: number; registry?: ToolRegistry } = {},
): Promise<MemoryCore> {
  const db = new MemoryDb();
  const registry = opts.registry ?? new ToolRegistry({ hotReload: false, logger: silentLogger });
  await registry.load();
  const catalog = new ToolCatalog(registry, 0.8);
  const units = new MemoryUnitsOfWork(db);
  const conversations = new MemoryConversationStore(db);
  const resourceStore = new MemoryResourceStore(db);
  const permissionStore = new MemoryPermissionStore(db);
  const access = new ConversationAccess(conversations);
  const auditStore = new MemoryAuditStore(db);
  const audit = new AuditService(auditStore, access, negotiationStatus, () => db.now());
  const resources = new ResourceService(resourceStore, conversations, 1_000_000, { access, audit });
  const permissions = new PermissionService({
    store: permissionStore,
    units,
    access,
    tools: () => catalog.snapshot().set.tools.map((t) => t.name),
    audit,
  });
  const approvals = new ApprovalService(
    new MemoryApprovalStore(db),
    conversations,
    { ttlSeconds: opts.approvalTtlSeconds ?? 600, logger: silentLogger },
    { levels: permissions, units, audit },
  );
  const manager = new ConversationManager({
    approvals,
    decisions: new MemoryDecisionStore(db),
    levels: permissions,
    conversations,
    units,
    resources,
    catalog,
    logger: silentLogger,
    exportDir: '/nonexistent-export-dir',
    toolTimeoutMs: opts.toolTimeoutMs ?? 5000,
    audit,
  });
  return { db, units, auditStore, manager, approvals, permissions, audit, catalog, registry };
}
