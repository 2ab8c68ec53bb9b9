/**
 * The SubscriptionStore port (src/core/ports/subscriptions.ts) in SQL,
 * migration 20260702000000: the cursor, the outbox (subscription_deliveries)
 * and the locking that makes one replica run each delivery, in event order
 * per conversation: the fan-out holds the cursor row FOR UPDATE SKIP LOCKED;
 * a delivery is claimed only as its conversation's first pending one, with
 * FOR UPDATE SKIP LOCKED, and leased through next_attempt_at; its handler's
 * transaction marks it done only while that attempt still holds it.
 */
import type { Pool } from 'pg';
import type { LoggedEvent, Transaction } from '../core/ports';
import type {
  ClaimedSubscription,
  SubscriptionFailure,
  SubscriptionStore,
  SubscriptionTarget,
} from '../core/ports/subscriptions';
import { EVENT_COLUMNS, type EventRow, toEvent } from './event-log';
import { clientOf, inTransaction, translated } from './sql';

/**
 * A tool's effective level in a conversation, as negotiate decides it
 * (decision-store.ts, permissions.ts effectiveLevel): its explicit level (a
 * lapsed grant's previous one), else the conversation's M4 level, else 1.
 */
const LEVEL = 'coalesce(CASE WHEN p.expires_at <= now() THEN p.revert_to ELSE p.level END, c.legacy_level, 1)';

const INSERT_DELIVERIES = `
  INSERT INTO subscription_deliveries
    (event_id, tool, conversation_id, type, at, subject, depth, status, next_attempt_at, error, settled_at)
  SELECT e.id, t.tool, e.conversation_id, e.type, e.at, e.subject, e.depth,
         CASE WHEN e.depth >= $4 THEN 'cut' ELSE 'pending' END, now(),
         CASE WHEN e.depth >= $4 THEN $5 END, CASE WHEN e.depth >= $4 THEN now() END
    FROM unnest($1::bigint[], $2::text[], $3::int[]) AS t(event_id, tool, level)
    JOIN events e ON e.id = t.event_id
    -- A conversation created after the event is another one of the same id (deleted and created again).
    JOIN conversations c ON c.id = e.conversation_id AND c.created_at <= e.at
    LEFT JOIN tool_permissions p ON p.conversation_id = c.id AND p.tool = t.tool
   WHERE ${LEVEL} >= t.level
  ON CONFLICT DO NOTHING`;

/**
 * A conversation's first pending delivery, when due. The conditions on `d`
 * are checked again on the row's latest version once it is locked, so a
 * delivery another replica claimed or settled meanwhile is passed over.
 */
const CLAIM = `
  WITH heads AS (
    SELECT DISTINCT ON (conversation_id) event_id, tool FROM subscription_deliveries
     WHERE status = 'pending' ORDER BY conversation_id, event_id, tool),
  due AS (
    SELECT d.event_id, d.tool FROM subscription_deliveries d JOIN heads h ON h.event_id = d.event_id AND h.tool = d.tool
     WHERE d.status = 'pending' AND d.next_attempt_at <= now()
     ORDER BY d.next_attempt_at, d.event_id LIMIT $1
     FOR UPDATE OF d SKIP LOCKED)
  UPDATE subscription_deliveries d
     SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
    FROM due
   WHERE d.event_id = due.event_id AND d.tool = due.tool
  RETURNING d.event_id, d.tool, d.conversation_id, d.type, d.at, d.subject, d.depth, d.attempts`;

interface ClaimRow {
  event_id: string;
  tool: string;
  conversation_id: string;
  type: string;
  at: Date;
  subject: Record<string, unknown>;
  depth: number;
  attempts: number;
}

/** Why a cut delivery did not run. */
const CUT_REASON = 'depth_exceeded: the chain of subscription handlers is deeper than the limit';

export class SqlSubscriptionStore implements SubscriptionStore {
  constructor(private readonly pool: Pool) {}

  async fanOut(targets: (e: LoggedEvent) => SubscriptionTarget[], pageSize: number, maxDepth: number): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      // Another replica fanning out holds the row: it moves the cursor.
      const { rows: cursors } = await client.query<{ cursor: string }>(
        'SELECT cursor FROM subscription_cursor WHERE id = 1 FOR UPDATE SKIP LOCKED',
      );
      if (cursors.length === 0) return 0;
      // The head first: an event numbered after this read has a greater id, so moving the cursor to it skips none.
      const { rows: heads } = await client.query<{ id: string }>('SELECT coalesce(max(id), 0) AS id FROM events');
      const head = heads[0]!.id;
      const { rows } = await client.query<EventRow>(
        `SELECT ${EVENT_COLUMNS} FROM events
          WHERE id > $1 AND id <= $2 AND conversation_id IS NOT NULL AND type LIKE 'resource.%'
          ORDER BY id LIMIT $3`,
        [cursors[0]!.cursor, head, pageSize],
      );
      const ids: number[] = [];
      const tools: string[] = [];
      const levels: number[] = [];
      for (const row of rows) {
        const e = toEvent(row);
        for (const t of targets(e)) {
          ids.push(e.id);
          tools.push(t.tool);
          levels.push(t.level);
        }
      }
      if (ids.length > 0) await client.query(INSERT_DELIVERIES, [ids, tools, levels, maxDepth, CUT_REASON]);
      // A short page is the end: the cursor moves to the head, past the events filtered out in SQL.
      const cursor = rows.length < pageSize ? head : rows[rows.length - 1]!.id;
      await client.query('UPDATE subscription_cursor SET cursor = greatest(cursor, $1::bigint) WHERE id = 1', [cursor]);
      return rows.length;
    });
  }

  async claim(limit: number, leaseMs: number): Promise<ClaimedSubscription[]> {
    const { rows } = await translated(this.pool.query<ClaimRow>(CLAIM, [limit, leaseMs]));
    return rows.map((r) => ({
      eventId: Number(r.event_id),
      tool: r.tool,
      conversationId: r.conversation_id,
      type: r.type,
      at: r.at.getTime(),
      subject: toEvent({
        id: r.event_id,
        at: r.at,
        conversation_id: r.conversation_id,
        owner: null,
        known: true,
        type: r.type as EventRow['type'],
        subject: r.subject,
      }).subject,
      depth: r.depth,
      attempt: r.attempts,
    }));
  }

  async begin(tx: Transaction, d: ClaimedSubscription, depth: number): Promise<number | undefined> {
    const { rows } = await translated(
      clientOf(tx).query<{ level: number | null }>(
        `SELECT set_config('gateway.event_depth', $1, true),
                (SELECT ${LEVEL} FROM conversations c
                   LEFT JOIN tool_permissions p ON p.conversation_id = c.id AND p.tool = $3
                  WHERE c.id = $2) AS level`,
        [String(depth), d.conversationId, d.tool],
      ),
    );
    return rows[0]?.level ?? undefined;
  }

  async complete(tx: Transaction, d: ClaimedSubscription, status: 'done' | 'skipped'): Promise<boolean> {
    const { rowCount } = await translated(
      clientOf(tx).query(
        `UPDATE subscription_deliveries SET status = $3, error = NULL, settled_at = now()
          WHERE event_id = $1 AND tool = $2 AND status = 'pending' AND attempts = $4`,
        [d.eventId, d.tool, status, d.attempt],
      ),
    );
    return (rowCount ?? 0) > 0;
  }

  async fail(d: ClaimedSubscription, error: string, retryInMs: number | undefined): Promise<void> {
    await translated(
      this.pool.query(
        `UPDATE subscription_deliveries
            SET status = CASE WHEN $4::double precision IS NULL THEN 'failed' ELSE 'pending' END,
                next_attempt_at = now() + make_interval(secs => coalesce($4::double precision, 0) / 1000),
                error = $5, settled_at = CASE WHEN $4::double precision IS NULL THEN now() END
          WHERE event_id = $1 AND tool = $2 AND status = 'pending' AND attempts = $3`,
        [d.eventId, d.tool, d.attempt, retryInMs ?? null, error],
      ),
    );
  }

  async failures(conversationId: string, limit: number): Promise<SubscriptionFailure[]> {
    const { rows } = await translated(
      this.pool.query<{
        event_id: string;
        type: string;
        tool: string;
        resource: string;
        status: 'failed' | 'cut';
        attempts: number;
        error: string | null;
        settled_at: Date;
      }>(
        `SELECT event_id, type, tool, subject->>'name' AS resource, status, attempts, error, settled_at
           FROM subscription_deliveries
          WHERE conversation_id = $1 AND status IN ('failed', 'cut')
          ORDER BY event_id DESC, tool LIMIT $2`,
        [conversationId, limit],
      ),
    );
    return rows.map((r) => ({
      eventId: Number(r.event_id),
      type: r.type,
      tool: r.tool,
      resource: r.resource,
      status: r.status,
      attempts: r.attempts,
      error: r.error ?? '',
      at: r.settled_at.getTime(),
    }));
  }

  async prune(olderThanMs: number): Promise<number> {
    const { rowCount } = await translated(
      this.pool.query(
        `DELETE FROM subscription_deliveries
          WHERE status <> 'pending' AND settled_at < now() - make_interval(secs => $1::double precision / 1000)`,
        [olderThanMs],
      ),
    );
    return rowCount ?? 0;
  }
}
