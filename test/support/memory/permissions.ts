/** The PermissionStore port in memory: the steps of src/db/permission-store.ts's statements. */
import { RESERVED_CONVERSATION_ID, conversationNotFound, reservedIdError } from '../../../src/core/errors';
import { effectiveLevel } from '../../../src/core/permissions';
import type {
  PermissionEventView,
  PermissionStore,
  StoredLevelChange,
  StoredLevels,
  StoredLevelSetting,
  Transaction,
} from '../../../src/core/ports';
import type { Level } from '../../../src/core/tool-interface';
import { type MemoryDb, explicitLevelOf, key, newConversation, txOf } from './db';

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
