/**
 * Scoped permissions (seed 002): each tool has its own level in each
 * conversation. Effective level: the tool's explicit level if one was set;
 * else the conversation's M4 legacy level, if any; else 1 (read).
 *
 * Setting a level has one home, PermissionService.setLevel: the level, its
 * history row, the settling of the approval requests it makes unnecessary
 * and its `permission.changed` audit entry, in one transaction. Every way a
 * level changes goes through it: PUT …/permissions/{tool}, negotiate's
 * `upgrade:`, an approval for the conversation, an agent's approved upgrade,
 * and the end of a time-limited grant (the sweep).
 */
import type { ConversationAccess } from './access';
import type { AuditService } from './audit';
import { AppError, conversationNotFound } from './errors';
import { inOwnTransaction } from './in-transaction';
import type { LevelChange, PermissionEventView, PermissionStore, Transaction, UnitsOfWork } from './ports';
import { type Principal, actorOf } from './principal';

export type { LevelChange, PermissionEventView } from './ports';
import type { Level } from './tool-interface';

export const LEVEL_NAMES: Record<Level, string> = { 1: 'read', 2: 'write', 3: 'execute' };

export type LevelSource = 'explicit' | 'legacy' | 'default';

export function effectiveLevel(
  explicit: number | null | undefined,
  legacy: number | null | undefined,
): { level: Level; source: LevelSource } {
  if (explicit != null) return { level: explicit as Level, source: 'explicit' };
  if (legacy != null) return { level: legacy as Level, source: 'legacy' };
  return { level: 1, source: 'default' };
}

export function isLevel(n: unknown): n is Level {
  return n === 1 || n === 2 || n === 3;
}

export interface ToolPermissionView {
  tool: string;
  level: Level;
  source: LevelSource;
  upgradedAt: number | null;
}

export interface PermissionsView {
  conversationId: string;
  legacyLevel: number | null;
  tools: ToolPermissionView[];
}

/** One row per registered tool (an explicit level of a tool no longer registered stays stored, unlisted). */
export async function listPermissions(
  store: PermissionStore,
  conversationId: string,
  toolNames: readonly string[],
): Promise<PermissionsView> {
  const conv = await store.levels(conversationId);
  if (!conv) throw conversationNotFound(conversationId);
  const explicit = new Map(conv.explicit.map((p) => [p.tool, p]));
  const names = [...toolNames].sort();
  return {
    conversationId,
    legacyLevel: conv.legacyLevel,
    tools: names.map((tool) => {
      const p = explicit.get(tool);
      const { level, source } = effectiveLevel(p?.level, conv.legacyLevel);
      return { tool, level, source, upgradedAt: p ? p.upgradedAt.getTime() : null };
    }),
  };
}

export async function permissionHistory(
  store: PermissionStore,
  conversationId: string,
): Promise<PermissionEventView[]> {
  const events = await store.history(conversationId);
  if (!events) throw conversationNotFound(conversationId);
  return events;
}

/**
 * A level change. `by` is the history row's and the audit entry's actor
 * (actorOf(p), an approver, …); `requestId` the audit entry's.
 */
export interface LevelSetting {
  conversationId: string;
  tool: string;
  level: Level;
  by: string;
  requestId: string;
  /**
   * Set by hand by `principal`: the conversation is created on first use,
   * owned by it, and a non-admin must own it (else not_found). Absent: the
   * conversation must exist (an approval's).
   */
  principal?: Principal;
  /** A grant: the level holds until then, then returns to the one before the grant. */
  expiresAt?: Date;
  /** A level at or above `level` is left alone (nothing written, nothing audited). */
  raiseOnly?: boolean;
  /** The approval this change decides: not settled as `satisfied`. */
  decides?: string;
}

export interface LevelSet extends LevelChange {
  conversationCreated: boolean;
}

/** The actor (history, audit) and request id of the end of a time-limited grant. */
export const EXPIRY_ACTOR = 'expiry';
/** Due grants ended per sweep. */
const SWEEP_LIMIT = 200;

export interface PermissionServiceDeps {
  store: PermissionStore;
  units: UnitsOfWork;
  access: ConversationAccess;
  /** The tool names of the current tool set. */
  tools: () => readonly string[];
  /** Without it nothing is audited (tools' own tests, benches of the bare path). */
  audit?: AuditService;
}

export class PermissionService {
  constructor(private readonly deps: PermissionServiceDeps) {}

  /** GET …/permissions (owner, admin). */
  async list(p: Principal, conversationId: string): Promise<PermissionsView> {
    await this.deps.access.check(p, conversationId, 'manage', 'read permissions');
    return listPermissions(this.deps.store, conversationId, this.deps.tools());
  }

  /** GET …/permissions/history (owner, admin). */
  async history(p: Principal, conversationId: string): Promise<PermissionEventView[]> {
    await this.deps.access.check(p, conversationId, 'manage', 'read the permission history');
    return permissionHistory(this.deps.store, conversationId);
  }

  /** PUT …/permissions/{tool}: `p` sets the level (creating the conversation on first use). */
  async setByHand(
    p: Principal,
    conversationId: string,
    tool: string,
    level: Level,
    requestId: string,
  ): Promise<LevelChange> {
    // An agent learns only that it may not (or, for another conversation, nothing).
    if (p.role === 'agent') await this.deps.access.check(p, conversationId, 'manage', 'change permissions');
    if (!this.deps.tools().includes(tool)) throw new AppError('not_found', `Unknown tool: ${tool.slice(0, 64)}`);
    const set = await this.setLevel({ conversationId, tool, level, by: actorOf(p), requestId, principal: p });
    return { tool: set.tool, level: set.level, previousLevel: set.previousLevel };
  }

  /**
   * Sets the level: the change, its history row, the settling of the
   * pending requests it makes unnecessary and its audit entry (with the
   * `conversation.created` entry of a conversation it created), in `tx`
   * when given (an approval's transaction), else in a transaction of its own.
   * The owner check of a change by hand is made inside the transaction (no
   * separate round trip, no gap).
   */
  async setLevel(s: LevelSetting, tx?: Transaction): Promise<LevelSet> {
    const { conversationId, tool, level, by, principal: p } = s;
    const out = await this.inTransaction(tx, async (t) => {
      const stored = await this.deps.store.setLevel(
        {
          kind: 'set',
          conversationId,
          tool,
          level,
          actor: by,
          ...(p ? { createOwner: p.subject, ...(p.role === 'admin' ? {} : { requiredOwner: p.subject }) } : {}),
          ...(s.expiresAt ? { until: s.expiresAt } : {}),
          ...(s.raiseOnly ? { raiseOnly: true } : {}),
          ...(s.decides !== undefined ? { settleExcept: s.decides } : {}),
        },
        t,
      );
      // A `set` always answers (only an `expire` may find nothing to do).
      const r = stored!;
      const entry = { conversationId, actor: by, requestId: s.requestId };
      if (r.conversationCreated) await this.audited('conversation.created', entry, t);
      if (r.changed) await this.audited('permission.changed', { ...entry, change: r.change }, t);
      return r;
    });
    return { ...out.change, conversationCreated: out.conversationCreated };
  }

  /**
   * Ends the time-limited grants that are due: each level returns to the one
   * before its grant, with a history row and an audit entry by `expiry`, one
   * transaction each. Safe on every replica at once: the conversation's lock
   * lets one end each grant; the others find it ended. How many it ended.
   */
  async endDueGrants(): Promise<number> {
    let ended = 0;
    for (const due of await this.deps.store.dueGrants(SWEEP_LIMIT)) {
      const done = await this.inTransaction(undefined, async (t) => {
        const r = await this.deps.store.setLevel({ kind: 'expire', ...due }, t);
        const entry = { conversationId: due.conversationId, actor: EXPIRY_ACTOR, requestId: EXPIRY_ACTOR };
        if (r) await this.audited('permission.changed', { ...entry, change: r.change }, t);
        return r !== undefined;
      });
      if (done) ended++;
    }
    return ended;
  }

  /** The entry commits with the change (sent with its COMMIT). */
  private async audited(
    event: 'conversation.created' | 'permission.changed',
    entry: { conversationId: string; actor: string; requestId: string; change?: LevelChange },
    tx: Transaction,
  ): Promise<void> {
    const { conversationId, actor, requestId, change } = entry;
    await this.deps.audit?.record(
      event,
      {
        conversationId,
        actor,
        requestId,
        ...(change ? { tool: change.tool, action: `level-${change.previousLevel}-to-${change.level}` } : {}),
        outcome: 'success',
      },
      tx,
    );
  }

  private async inTransaction<T>(tx: Transaction | undefined, work: (tx: Transaction) => Promise<T>): Promise<T> {
    if (tx !== undefined) return work(tx);
    // What this replica queued before (a refusal just answered) is written first: never sealed after this change.
    await this.deps.audit?.flushQueued();
    return inOwnTransaction(this.deps.units, work);
  }
}
