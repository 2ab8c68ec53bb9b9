/**
 * The ApprovalStore port in SQL. Each change is decided by the database:
 * the partial unique index on pending rows makes concurrent refusals of one
 * principal's call meet in one row; a conditional UPDATE … WHERE status = 'approved'
 * lets exactly one retry consume a `once` approval; the sweep takes due rows
 * FOR UPDATE SKIP LOCKED, so with several replicas each row is applied once.
 */
import type { Pool } from 'pg';
import { newApprovalId } from '../core/approvals';
import type {
  Approval,
  ApprovalRequest,
  ApprovalStatus,
  ApprovalStore,
  Decision,
  DecisionOutcome,
  SettledCall,
} from '../core/ports';
import { effectiveLevel } from '../core/permissions';
import type { LevelChange, Transaction } from '../core/ports';
import type { Level } from '../core/tool-interface';
import { clientOf, translateError, translated, type Queryable } from './sql';
import { LazyTransaction } from './unit-of-work';

interface ApprovalRow {
  id: string;
  conversation_id: string;
  kind: 'call' | 'upgrade';
  tool: string;
  action: string;
  args: Record<string, unknown>;
  args_digest: string;
  required_level: number;
  current_level: number;
  requested_by: string;
  status: ApprovalStatus;
  created_at: Date;
  expires_at: Date | null;
  decided_by: string | null;
  decided_at: Date | null;
  scope: 'once' | 'conversation' | null;
  reason: string | null;
}

/** A pending (or approved `once`) row past its expiry reads as expired, whether or not the sweep got to it. */
const COLUMNS = `id, conversation_id, kind, tool, action, args, args_digest, required_level, current_level,
  requested_by, created_at, expires_at, decided_by, decided_at, scope, reason,
  CASE WHEN status IN ('pending', 'approved') AND scope IS DISTINCT FROM 'conversation' AND expires_at <= now()
       THEN 'expired' ELSE status END AS status`;

function toApproval(r: ApprovalRow): Approval {
  return {
    id: r.id,
    conversationId: r.conversation_id,
    kind: r.kind,
    tool: r.tool,
    action: r.action,
    args: r.args,
    argsDigest: r.args_digest,
    requiredLevel: r.required_level as Level,
    currentLevel: r.current_level as Level,
    requestedBy: r.requested_by,
    status: r.status,
    createdAt: r.created_at.getTime(),
    expiresAt: r.expires_at?.getTime() ?? null,
    decidedBy: r.decided_by,
    decidedAt: r.decided_at?.getTime() ?? null,
    scope: r.scope,
    reason: r.reason,
  };
}

/**
 * Inserts the pending request; on the pending row of the same principal's
 * same call, returns that one instead (the no-op update makes ON CONFLICT return it), unless it
 * has lapsed: then no row, and the caller expires it and tries again.
 */
const REQUEST = `
  INSERT INTO approvals (id, conversation_id, kind, tool, action, args, args_digest, required_level, current_level,
                         requested_by, expires_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11))
  ON CONFLICT (conversation_id, kind, tool, action, requested_by, args_digest) WHERE status = 'pending'
  DO UPDATE SET status = approvals.status WHERE approvals.expires_at > now()
  RETURNING ${COLUMNS}`;

const EXPIRE_LAPSED_CALL = `
  UPDATE approvals SET status = 'expired'
  WHERE conversation_id = $1 AND kind = $2 AND tool = $3 AND action = $4 AND requested_by = $5 AND args_digest = $6
    AND status = 'pending' AND expires_at <= now()`;

/** The principal's identical call ran (without an approval, or under another one): its pending request is settled. */
const SATISFY_CALL = `
  UPDATE approvals SET status = 'satisfied', decided_at = now(), reason = 'The same call ran at the tool''s level'
  WHERE conversation_id = $1 AND kind = 'call' AND tool = $2 AND action = $3 AND requested_by = $4 AND args_digest = $5
    AND status = 'pending' AND expires_at > now()`;

/**
 * A level change settles what it makes unnecessary: every principal's
 * pending request (a call, or an agent's upgrade) of that tool asking for at
 * most the new level becomes `satisfied`, decided by whoever set the level.
 * Run in the change's own transaction, by every path that sets a level (by
 * hand: src/db/permission-store.ts; by an approval: below). $5: an approval
 * this change decides otherwise (an approval for the conversation), or null.
 * A lapsed request is left to expire. Lowering a level settles nothing a
 * refusal could have recorded (it asked for more than the level it saw).
 * SKIP LOCKED: a request locked now is being decided by someone else (an
 * approval that locked it and waits for this conversation's lock, which this
 * change holds); waiting for it would deadlock, and that decision ends it.
 */
export const SETTLE_BY_LEVEL = `
  UPDATE approvals
  SET status = 'satisfied', decided_by = $4::text, decided_at = now(),
      reason = format('The tool''s level was set to %s by %s', $3::int, $4::text)
  WHERE id IN (
    SELECT id FROM approvals
    WHERE conversation_id = $1 AND tool = $2 AND status = 'pending' AND required_level <= $3::int
      AND expires_at > now() AND id IS DISTINCT FROM $5::text
    FOR UPDATE SKIP LOCKED)`;

/** Ends due grants: the level returns to what it was (no explicit level: the row goes), with a history row by `expiry`. */
const SWEEP_GRANTS = `
  WITH due AS (
    SELECT p.conversation_id, p.tool, p.level, p.revert_to, c.legacy_level
    FROM tool_permissions p JOIN conversations c ON c.id = p.conversation_id
    WHERE p.expires_at <= now()
    ORDER BY p.expires_at
    LIMIT 200
    FOR UPDATE OF p SKIP LOCKED
  ), reverted AS (
    UPDATE tool_permissions p SET level = d.revert_to, expires_at = NULL, revert_to = NULL, upgraded_at = now()
    FROM due d WHERE p.conversation_id = d.conversation_id AND p.tool = d.tool AND d.revert_to IS NOT NULL
  ), removed AS (
    DELETE FROM tool_permissions p USING due d
    WHERE p.conversation_id = d.conversation_id AND p.tool = d.tool AND d.revert_to IS NULL
  ), history AS (
    INSERT INTO permission_history (conversation_id, tool, from_level, to_level, actor, at)
    SELECT conversation_id, tool, level, COALESCE(revert_to, legacy_level, 1), 'expiry', now() FROM due
    RETURNING conversation_id, tool, from_level, to_level
  )
  -- Each change's audit entry, in the same statement (sealed into the chain like any other).
  INSERT INTO audit_pending (at, conversation_id, actor, event, tool, action, outcome, request_id)
  SELECT now(), conversation_id, 'expiry', 'permission.changed', tool,
         'level-' || from_level || '-to-' || to_level, 'success', 'expiry'
  FROM history`;

const SWEEP_REQUESTS = `
  UPDATE approvals SET status = 'expired'
  WHERE id IN (
    SELECT id FROM approvals
    WHERE status IN ('pending', 'approved') AND scope IS DISTINCT FROM 'conversation' AND expires_at <= now()
    LIMIT 1000 FOR UPDATE SKIP LOCKED)`;

export class SqlApprovalStore implements ApprovalStore {
  constructor(private readonly pool: Pool) {}

  async request(r: ApprovalRequest, ttlSeconds: number): Promise<Approval> {
    for (let attempt = 1; ; attempt++) {
      const res = await translated(
        this.pool.query<ApprovalRow>(REQUEST, [
          newApprovalId(),
          r.conversationId,
          r.kind,
          r.tool,
          r.action,
          JSON.stringify(r.args),
          r.argsDigest,
          r.requiredLevel,
          r.currentLevel,
          r.requestedBy,
          ttlSeconds,
        ]),
      );
      if (res.rows[0]) return toApproval(res.rows[0]);
      if (attempt === 3) throw new Error('An approval request could neither be recorded nor read');
      await translated(
        this.pool.query(EXPIRE_LAPSED_CALL, [r.conversationId, r.kind, r.tool, r.action, r.requestedBy, r.argsDigest]),
      );
    }
  }

  async get(conversationId: string, id: string): Promise<Approval | undefined> {
    const res = await translated(
      this.pool.query<ApprovalRow>(`SELECT ${COLUMNS} FROM approvals WHERE id = $1 AND conversation_id = $2`, [
        id,
        conversationId,
      ]),
    );
    return res.rows[0] && toApproval(res.rows[0]);
  }

  async list(conversationId: string, status: ApprovalStatus | undefined, limit: number): Promise<Approval[]> {
    const res = await translated(
      this.pool.query<ApprovalRow>(
        `SELECT * FROM (SELECT ${COLUMNS} FROM approvals WHERE conversation_id = $1) a
         WHERE $2::text IS NULL OR status = $2
         ORDER BY created_at DESC, id DESC LIMIT $3`,
        [conversationId, status ?? null, limit],
      ),
    );
    return res.rows.map(toApproval);
  }

  approve(conversationId: string, id: string, d: Decision): Promise<DecisionOutcome> {
    return this.inTransaction(async (c) => {
      const a = await this.lockPending(c, conversationId, id);
      if (typeof a === 'string') return a;
      if (d.scope === 'once') {
        return this.decide(
          c,
          id,
          `status = 'approved', scope = 'once', decided_by = $2, decided_at = now(),
          expires_at = now() + make_interval(secs => $3)`,
          [d.by, d.expiresInSeconds],
        );
      }
      // A call's approval raises the level (never lowers it); an upgrade's sets the level it asked for.
      const grantEnds = await this.grant(c, a, d);
      return this.decide(
        c,
        id,
        `status = 'approved', scope = 'conversation', decided_by = $2, decided_at = now(),
          expires_at = $3`,
        [d.by, grantEnds],
      );
    });
  }

  reject(conversationId: string, id: string, by: string, reason: string | null): Promise<DecisionOutcome> {
    return this.inTransaction(async (c) => {
      const a = await this.lockPending(c, conversationId, id);
      if (typeof a === 'string') return a;
      return this.decide(c, id, `status = 'rejected', decided_by = $2, decided_at = now(), reason = $3`, [by, reason]);
    });
  }

  async claim(id: string, tx: Transaction): Promise<boolean> {
    const res = await translated(
      clientOf(tx).query(
        `UPDATE approvals SET status = 'used', used_at = now()
         WHERE id = $1 AND status = 'approved' AND scope = 'once' AND expires_at > now()`,
        [id],
      ),
    );
    return res.rowCount === 1;
  }

  claimUpgrade(
    id: string,
    conversationId: string,
    tool: string,
    level: Level,
    actor: string,
  ): Promise<LevelChange | undefined> {
    return this.inTransaction(async (c) => {
      if (!(await this.claim(id, c as unknown as Transaction))) return undefined;
      return setLevel(c, conversationId, tool, level, actor, undefined);
    });
  }

  async satisfy(call: SettledCall): Promise<number> {
    const res = await translated(
      this.pool.query(SATISFY_CALL, [call.conversationId, call.tool, call.action, call.requestedBy, call.argsDigest]),
    );
    return res.rowCount ?? 0;
  }

  async sweep(): Promise<{ expired: number; reverted: number }> {
    const grants = await translated(this.pool.query(SWEEP_GRANTS));
    const requests = await translated(this.pool.query(SWEEP_REQUESTS));
    return { expired: requests.rowCount ?? 0, reverted: grants.rowCount ?? 0 };
  }

  private async lockPending(
    c: Queryable,
    conversationId: string,
    id: string,
  ): Promise<Approval | 'not_found' | 'not_pending'> {
    const res = await c.query<ApprovalRow>(
      `SELECT ${COLUMNS} FROM approvals WHERE id = $1 AND conversation_id = $2 FOR UPDATE`,
      [id, conversationId],
    );
    const row = res.rows[0];
    if (!row) return 'not_found';
    return row.status === 'pending' ? toApproval(row) : 'not_pending';
  }

  private async decide(c: Queryable, id: string, set: string, values: unknown[]): Promise<Approval> {
    const res = await c.query<ApprovalRow>(`UPDATE approvals SET ${set} WHERE id = $1 RETURNING ${COLUMNS}`, [
      id,
      ...values,
    ]);
    return toApproval(res.rows[0]!);
  }

  /** The level change of a `conversation` approval; the grant's end (null: none). */
  private async grant(c: Queryable, a: Approval, d: Decision): Promise<Date | null> {
    const until = d.expiresInSeconds === undefined ? null : new Date(Date.now() + d.expiresInSeconds * 1000);
    await setLevel(c, a.conversationId, a.tool, a.requiredLevel, d.by, {
      raiseOnly: a.kind === 'call',
      ...(until ? { until } : {}),
      decided: a.id,
    });
    return until;
  }

  /** `work` in a transaction of its own: committed when it resolves, rolled back when it throws. */
  private async inTransaction<T>(work: (c: Queryable) => Promise<T>): Promise<T> {
    const unit = new LazyTransaction(this.pool);
    try {
      const out = await work(clientOf(await unit.transaction()));
      await unit.commit();
      return out;
    } catch (err) {
      await unit.rollback();
      throw translateError(err);
    }
  }
}

/**
 * Sets the tool's level with its history row, the conversation locked as
 * PermissionStore.setLevel does. `grant.until`: the level holds until then,
 * and returns to the level before the grant (an active grant's own
 * "before" is kept, so stacked grants end where the first began).
 * `grant.raiseOnly`: a level at or above the target is left alone.
 * The change settles the pending requests it makes unnecessary
 * (SETTLE_BY_LEVEL), except `grant.decided`, the approval that made it.
 */
async function setLevel(
  c: Queryable,
  conversationId: string,
  tool: string,
  level: Level,
  actor: string,
  grant: { until?: Date; raiseOnly: boolean; decided?: string } | undefined,
): Promise<LevelChange> {
  const conv = await c.query<{ legacy_level: number | null }>(
    'SELECT legacy_level FROM conversations WHERE id = $1 FOR UPDATE',
    [conversationId],
  );
  if (!conv.rows[0]) throw new Error(`Conversation ${conversationId} vanished while its approval was decided`);
  const cur = await c.query<{ level: number; expires_at: Date | null; revert_to: number | null }>(
    'SELECT level, expires_at, revert_to FROM tool_permissions WHERE conversation_id = $1 AND tool = $2 FOR UPDATE',
    [conversationId, tool],
  );
  const row = cur.rows[0];
  const lapsed = row?.expires_at != null && row.expires_at.getTime() <= Date.now();
  // The explicit level as the decision sees it, and the one a grant would return to.
  const explicitNow = row ? (lapsed ? row.revert_to : row.level) : null;
  const beforeGrant = row && row.expires_at != null && !lapsed ? row.revert_to : explicitNow;
  const previousLevel = effectiveLevel(explicitNow, conv.rows[0].legacy_level).level;
  if (grant?.raiseOnly && previousLevel >= level) return { tool, level: previousLevel, previousLevel };
  await c.query(
    `INSERT INTO tool_permissions (conversation_id, tool, level, upgraded_at, expires_at, revert_to)
     VALUES ($1, $2, $3, now(), $4, $5)
     ON CONFLICT (conversation_id, tool) DO UPDATE
       SET level = $3, upgraded_at = now(), expires_at = $4, revert_to = $5`,
    [conversationId, tool, level, grant?.until ?? null, grant?.until ? beforeGrant : null],
  );
  await c.query(
    `INSERT INTO permission_history (conversation_id, tool, from_level, to_level, actor, at)
     VALUES ($1, $2, $3, $4, $5, now())`,
    [conversationId, tool, previousLevel, level, actor],
  );
  // The change's audit entry commits with it (the approval's decision has an entry of its own).
  await c.query(
    `INSERT INTO audit_pending (at, conversation_id, actor, event, tool, action, outcome, request_id)
     VALUES (now(), $1, $2, 'permission.changed', $3, $4, 'success', '-')`,
    [conversationId, actor, tool, `level-${previousLevel}-to-${level}`],
  );
  await c.query('UPDATE conversations SET updated_at = now() WHERE id = $1', [conversationId]);
  await c.query(SETTLE_BY_LEVEL, [conversationId, tool, level, actor, grant?.decided ?? null]);
  return { tool, level, previousLevel };
}

/**
 * Pending approval requests across all replicas, for the approvals_pending
 * gauge (src/observability/metrics.ts), read at scrape time: one count over
 * the partial index approvals_open_expires_at_idx. Lapsed rows the sweep has
 * not reached yet are not pending (as COLUMNS reads them).
 */
export async function countPendingApprovals(pool: Queryable): Promise<number> {
  const { rows } = await pool.query<{ n: number }>({
    name: 'approvals_pending_count',
    text: `SELECT count(*)::int AS n FROM approvals WHERE status = 'pending' AND (expires_at IS NULL OR expires_at > now())`,
  });
  return rows[0]?.n ?? 0;
}
