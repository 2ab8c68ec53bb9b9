/**
 * The PermissionStore port: a level change in SQL, in the caller's
 * transaction (a few round trips, the conversation row locked first), and
 * the reads with Prisma. Every call's errors are translated (src/db/sql.ts)
 * like the other adapters'.
 */
import { effectiveLevel, type LevelChange, type PermissionEventView } from '../core/permissions';
import type { PermissionStore, StoredLevelChange, StoredLevels, StoredLevelSetting, Transaction } from '../core/ports';
import type { Level } from '../core/tool-interface';
import type { PrismaClient } from '../generated/prisma/client';
import { clientOf, translated, type Queryable } from './sql';
import { RESERVED_CONVERSATION_ID, conversationNotFound, reservedIdError } from '../core/errors';

/**
 * Creates the conversation unless it exists and locks its row (the no-op
 * update takes the lock and returns the row as it is once the lock is held).
 */
const ENSURE_AND_LOCK = `
  INSERT INTO conversations (id, owner) VALUES ($1, $2)
  ON CONFLICT (id) DO UPDATE SET owner = conversations.owner
  RETURNING legacy_level, owner, (xmax = 0) AS inserted`;

const LOCK = 'SELECT legacy_level, owner, false AS inserted FROM conversations WHERE id = $1 FOR UPDATE';

/** Read after the conversation's lock is held (a statement of its own: it sees what the previous holder committed). */
const CURRENT = `
  SELECT level, expires_at, revert_to, expires_at IS NOT NULL AND expires_at <= now() AS lapsed
  FROM tool_permissions WHERE conversation_id = $1 AND tool = $2`;

const WRITE = `
  INSERT INTO tool_permissions (conversation_id, tool, level, upgraded_at, expires_at, revert_to)
  VALUES ($1, $2, $3::int, now(), $4::timestamptz, $5::int)
  ON CONFLICT (conversation_id, tool) DO UPDATE
    SET level = $3::int, upgraded_at = now(), expires_at = $4::timestamptz, revert_to = $5::int`;

const HISTORY = `
  INSERT INTO permission_history (conversation_id, tool, from_level, to_level, actor, at)
  VALUES ($1, $2, $3::int, $4::int, $5::text, now())`;

const TOUCH = 'UPDATE conversations SET updated_at = now() WHERE id = $1';

/**
 * A level change settles what it makes unnecessary: every principal's
 * pending request (a call, or an agent's upgrade) of that tool asking for at
 * most the new level becomes `satisfied`, decided by whoever set the level
 * ($4). $5: the approval this change decides otherwise (an approval for the
 * conversation), or null. A lapsed request is left to expire. Lowering a
 * level settles nothing a refusal could have recorded (it asked for more
 * than the level it saw). SKIP LOCKED: a request locked now is being decided
 * by someone else (an approval that locked it and waits for this
 * conversation's lock, which this change holds); waiting for it would
 * deadlock, and that decision ends it. Sent last, once the level is written.
 */
const SETTLE = `
  UPDATE approvals
  SET status = 'satisfied', decided_by = $4::text, decided_at = now(),
      reason = format('The tool''s level was set to %s by %s', $3::int, $4::text)
  WHERE id IN (
    SELECT id FROM approvals
    WHERE conversation_id = $1 AND tool = $2 AND status = 'pending' AND required_level <= $3::int
      AND expires_at > now() AND id IS DISTINCT FROM $5::text
    FOR UPDATE SKIP LOCKED)`;

/** A due grant ends: the level before it comes back (none: the explicit level goes), with a history row by `expiry`. */
const EXPIRE = `
  WITH reverted AS (
    UPDATE tool_permissions SET level = $3::int, expires_at = NULL, revert_to = NULL, upgraded_at = now()
    WHERE conversation_id = $1 AND tool = $2 AND $5::boolean
  ), removed AS (
    DELETE FROM tool_permissions WHERE conversation_id = $1 AND tool = $2 AND NOT $5::boolean
  )
  INSERT INTO permission_history (conversation_id, tool, from_level, to_level, actor, at)
  VALUES ($1, $2, $4::int, $3::int, 'expiry', now())`;

interface CurrentRow {
  level: number;
  expires_at: Date | null;
  revert_to: number | null;
  lapsed: boolean;
}

export class PrismaPermissionStore implements PermissionStore {
  constructor(private readonly prisma: PrismaClient) {}

  setLevel(s: StoredLevelSetting, tx: Transaction): Promise<StoredLevelChange | undefined> {
    // The database refuses the reserved id too; refused here before any statement.
    if (s.conversationId === RESERVED_CONVERSATION_ID) throw reservedIdError();
    return translated(s.kind === 'set' ? set(clientOf(tx), s) : expire(clientOf(tx), s));
  }

  async dueGrants(limit: number): Promise<Array<{ conversationId: string; tool: string }>> {
    const rows = await translated(
      this.prisma.$queryRaw<Array<{ conversation_id: string; tool: string }>>`
        SELECT conversation_id, tool FROM tool_permissions WHERE expires_at <= now() ORDER BY expires_at LIMIT ${limit}`,
    );
    return rows.map((r) => ({ conversationId: r.conversation_id, tool: r.tool }));
  }

  async levels(conversationId: string): Promise<StoredLevels | undefined> {
    const conv = await translated(
      this.prisma.conversation.findUnique({
        where: { id: conversationId },
        select: {
          legacyLevel: true,
          permissions: { select: { tool: true, level: true, upgradedAt: true, expiresAt: true, revertTo: true } },
        },
      }),
    );
    if (!conv) return undefined;
    const explicit = conv.permissions.flatMap((p) => {
      const level = explicitLevelOf(p);
      return level === null ? [] : [{ tool: p.tool, level, upgradedAt: p.upgradedAt }];
    });
    return { legacyLevel: conv.legacyLevel, explicit };
  }

  async history(conversationId: string): Promise<PermissionEventView[] | undefined> {
    const conv = await translated(
      this.prisma.conversation.findUnique({
        where: { id: conversationId },
        select: {
          history: {
            orderBy: { id: 'asc' },
            select: { tool: true, fromLevel: true, toLevel: true, at: true, actor: true },
          },
        },
      }),
    );
    return conv?.history.map((e) => ({
      tool: e.tool,
      fromLevel: e.fromLevel,
      toLevel: e.toLevel,
      at: e.at.getTime(),
      actor: e.actor,
    }));
  }
}

/** The explicit level as negotiate's decision sees it: a time-limited grant past its end is its previous level. */
function explicitLevelOf(
  p: { level: number; expiresAt: Date | null; revertTo: number | null } | null | undefined,
): number | null {
  if (!p) return null;
  return p.expiresAt !== null && p.expiresAt.getTime() <= Date.now() ? p.revertTo : p.level;
}

async function set(c: Queryable, s: Extract<StoredLevelSetting, { kind: 'set' }>): Promise<StoredLevelChange> {
  const { conversationId, tool, level, actor } = s;
  const conv = (
    await (s.createOwner !== undefined
      ? c.query<ConversationRow>(ENSURE_AND_LOCK, [conversationId, s.createOwner])
      : c.query<ConversationRow>(LOCK, [conversationId]))
  ).rows[0];
  if (!conv || (s.requiredOwner !== undefined && conv.owner !== s.requiredOwner)) {
    throw conversationNotFound(conversationId);
  }
  const row = (await c.query<CurrentRow>(CURRENT, [conversationId, tool])).rows[0];
  // The explicit level as negotiate's decision sees it, and the one a grant would return to
  // (an active grant's own "before" is kept, so stacked grants end where the first began).
  const explicitNow = row ? (row.lapsed ? row.revert_to : row.level) : null;
  const beforeGrant = row && row.expires_at !== null && !row.lapsed ? row.revert_to : explicitNow;
  const previousLevel = effectiveLevel(explicitNow, conv.legacy_level).level;
  const conversationCreated = conv.inserted;
  if (s.raiseOnly && previousLevel >= level) {
    return { change: { tool, level: previousLevel, previousLevel }, changed: false, conversationCreated };
  }
  await c.query(WRITE, [conversationId, tool, level, s.until ?? null, s.until ? beforeGrant : null]);
  await c.query(HISTORY, [conversationId, tool, previousLevel, level, actor]);
  await c.query(TOUCH, [conversationId]);
  await c.query(SETTLE, [conversationId, tool, level, actor, s.settleExcept ?? null]);
  return { change: { tool, level, previousLevel }, changed: true, conversationCreated };
}

async function expire(
  c: Queryable,
  s: Extract<StoredLevelSetting, { kind: 'expire' }>,
): Promise<StoredLevelChange | undefined> {
  const conv = (await c.query<ConversationRow>(LOCK, [s.conversationId])).rows[0];
  if (!conv) return undefined;
  const row = (await c.query<CurrentRow>(CURRENT, [s.conversationId, s.tool])).rows[0];
  if (!row || row.expires_at === null || !row.lapsed) return undefined;
  const level = (row.revert_to ?? conv.legacy_level ?? 1) as Level;
  await c.query(EXPIRE, [s.conversationId, s.tool, level, row.level, row.revert_to !== null]);
  const change: LevelChange = { tool: s.tool, level, previousLevel: row.level as Level };
  return { change, changed: true, conversationCreated: false };
}

interface ConversationRow {
  legacy_level: number | null;
  owner: string | null;
  inserted: boolean;
}
