/**
 * The ApprovalStore port in SQL. Each change is decided by the database:
 * the partial unique index on pending rows makes concurrent refusals of one
 * principal's call meet in one row; a conditional UPDATE … WHERE status = 'approved'
 * lets exactly one retry consume a `once` approval; the sweep takes lapsed
 * rows FOR UPDATE SKIP LOCKED, so with several replicas each row is expired
 * once. An approval for the conversation sets the level through
 * PermissionService.setLevel, in the transaction of lockPending and approve.
 */
import type { Pool } from 'pg';
import { newApprovalId } from '../core/approvals';
import type {
  Approval,
  ApprovalRequest,
  ApprovalInboxStore,
  ApprovalStatus,
  ApprovalStore,
  Decision,
  DecisionOutcome,
  InboxQuery,
  SettledCall,
  Transaction,
} from '../core/ports';
import type { Level } from '../core/tool-interface';
import { clientOf, translateError, translated, type Queryable } from './sql';
import { LazyTransaction } from './unit-of-work';

export interface ApprovalRow {
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

export function toApproval(r: ApprovalRow): Approval {
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

const SWEEP_REQUESTS = `
  UPDATE approvals SET status = 'expired'
  WHERE id IN (
    SELECT id FROM approvals
    WHERE status IN ('pending', 'approved') AND scope IS DISTINCT FROM 'conversation' AND expires_at <= now()
    LIMIT 1000 FOR UPDATE SKIP LOCKED)`;

/**
 * The inbox: one owner's conversations (or all), newest first, after the cursor. The cursor's
 * condition and the order read the (created_at, id) index; the status is the one COLUMNS computes.
 */
const INBOX = `
  SELECT * FROM (
    SELECT ${COLUMNS} FROM approvals
    WHERE ($1::text IS NULL OR conversation_id IN (SELECT c.id FROM conversations c WHERE c.owner = $1))
      AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::text))) a
  WHERE $4::text IS NULL OR status = $4
  ORDER BY created_at DESC, id DESC LIMIT $5`;

export class SqlApprovalStore implements ApprovalStore, ApprovalInboxStore {
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

  async inbox(q: InboxQuery): Promise<Approval[]> {
    const res = await translated(
      this.pool.query<ApprovalRow>(INBOX, [
        q.owner ?? null,
        q.before ? new Date(q.before.createdAt) : null,
        q.before?.id ?? null,
        q.status ?? null,
        q.limit,
      ]),
    );
    return res.rows.map(toApproval);
  }

  lockPending(conversationId: string, id: string, tx: Transaction): Promise<Approval | 'not_found' | 'not_pending'> {
    return translated(this.pendingRow(clientOf(tx), conversationId, id));
  }

  approve(id: string, d: Decision, tx: Transaction): Promise<Approval> {
    const c = clientOf(tx);
    return translated(
      d.scope === 'once'
        ? this.decide(
            c,
            id,
            `status = 'approved', scope = 'once', decided_by = $2, decided_at = now(),
          expires_at = now() + make_interval(secs => $3)`,
            [d.by, d.expiresInSeconds],
          )
        : this.decide(
            c,
            id,
            `status = 'approved', scope = 'conversation', decided_by = $2, decided_at = now(),
          expires_at = $3`,
            [d.by, d.until],
          ),
    );
  }

  reject(conversationId: string, id: string, by: string, reason: string | null): Promise<DecisionOutcome> {
    return this.inTransaction(async (c) => {
      const a = await this.pendingRow(c, conversationId, id);
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

  async release(id: string): Promise<void> {
    await translated(
      this.pool.query(`UPDATE approvals SET status = 'approved', used_at = NULL WHERE id = $1 AND status = 'used'`, [
        id,
      ]),
    );
  }

  async satisfy(call: SettledCall): Promise<number> {
    const res = await translated(
      this.pool.query(SATISFY_CALL, [call.conversationId, call.tool, call.action, call.requestedBy, call.argsDigest]),
    );
    return res.rowCount ?? 0;
  }

  async sweep(): Promise<number> {
    const requests = await translated(this.pool.query(SWEEP_REQUESTS));
    return requests.rowCount ?? 0;
  }

  private async pendingRow(
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
