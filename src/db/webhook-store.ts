/**
 * The WebhookStore port (src/core/ports/webhooks.ts) in SQL, migration
 * 20260601000000: the hooks, the outbox (webhook_deliveries) and the
 * delivery log (webhook_attempts). The locking that makes one replica handle
 * each hook's fan-out and send each message is here: FOR UPDATE SKIP LOCKED,
 * and a lease on next_attempt_at.
 */
import type { Pool, PoolClient } from 'pg';
import type { EventType, LoggedEvent } from '../core/ports';
import type {
  AttemptOutcome,
  ClaimedDelivery,
  DeliveryAttempt,
  NewWebhook,
  StoredWebhook,
  WebhookStore,
} from '../core/ports/webhooks';
import { eventData, hookFilter } from '../core/webhook-outbox';
import { EVENT_COLUMNS, type EventRow, toEvent } from './event-log';
import { inTransaction, translated } from './sql';

interface WebhookRow {
  id: string;
  owner: string;
  owner_role: 'admin' | 'user';
  url: string;
  events: EventType[];
  conversation_id: string | null;
  enabled: boolean;
  created_at: Date;
  cursor: string;
}

const HOOK_COLUMNS = 'id, owner, owner_role, url, events, conversation_id, enabled, created_at, cursor';
/** Hooks fanned out per transaction. */
const HOOKS_PER_ROUND = 50;

function toWebhook(r: WebhookRow): StoredWebhook {
  return {
    id: r.id,
    owner: r.owner,
    ownerRole: r.owner_role,
    url: r.url,
    events: r.events,
    conversationId: r.conversation_id,
    enabled: r.enabled,
    createdAt: r.created_at.getTime(),
  };
}

export class SqlWebhookStore implements WebhookStore {
  constructor(private readonly pool: Pool) {}

  async insert(h: NewWebhook): Promise<StoredWebhook> {
    const { rows } = await translated(
      this.pool.query<WebhookRow>(
        `INSERT INTO webhooks (id, owner, owner_role, url, events, conversation_id, secret, cursor, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${HOOK_COLUMNS}`,
        [h.id, h.owner, h.ownerRole, h.url, h.events, h.conversationId, h.sealedSecret, h.cursor, h.createdBy],
      ),
    );
    return toWebhook(rows[0]!);
  }

  async get(id: string): Promise<StoredWebhook | undefined> {
    const { rows } = await translated(
      this.pool.query<WebhookRow>(`SELECT ${HOOK_COLUMNS} FROM webhooks WHERE id = $1`, [id]),
    );
    return rows[0] && toWebhook(rows[0]);
  }

  async list(owner: string | undefined, limit: number): Promise<StoredWebhook[]> {
    const { rows } = await translated(
      this.pool.query<WebhookRow>(
        `SELECT ${HOOK_COLUMNS} FROM webhooks WHERE ($1::text IS NULL OR owner = $1)
         ORDER BY created_at DESC, id LIMIT $2`,
        [owner ?? null, limit],
      ),
    );
    return rows.map(toWebhook);
  }

  async delete(id: string): Promise<boolean> {
    const { rowCount } = await translated(this.pool.query('DELETE FROM webhooks WHERE id = $1', [id]));
    return (rowCount ?? 0) > 0;
  }

  async attempts(id: string, limit: number): Promise<DeliveryAttempt[]> {
    const { rows } = await translated(
      this.pool.query<{
        event_id: string;
        type: EventType;
        attempt: number;
        status: 'delivered' | 'failed';
        response_status: number | null;
        error: string | null;
        at: Date;
      }>(
        `SELECT event_id, type, attempt, status, response_status, error, at FROM webhook_attempts
         WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2`,
        [id, limit],
      ),
    );
    return rows.map((r) => ({
      eventId: Number(r.event_id),
      type: r.type,
      attempt: r.attempt,
      status: r.status,
      ...(r.response_status !== null ? { responseStatus: r.response_status } : {}),
      at: r.at.getTime(),
      ...(r.error !== null ? { error: r.error } : {}),
    }));
  }

  async head(): Promise<number> {
    const { rows } = await translated(
      this.pool.query<{ id: string }>(
        'SELECT greatest((SELECT max(id) FROM events), (SELECT purged_through FROM event_horizon WHERE id = 1), 0) AS id',
      ),
    );
    return Number(rows[0]?.id ?? 0);
  }

  async fanOut(pick: (hook: StoredWebhook, events: LoggedEvent[]) => LoggedEvent[], pageSize: number): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      // Hooks another replica is fanning out are skipped: it moves their cursors.
      const { rows: hooks } = await client.query<WebhookRow>(
        `SELECT ${HOOK_COLUMNS} FROM webhooks w
          WHERE enabled AND EXISTS (SELECT 1 FROM events e WHERE e.id > w.cursor)
          ORDER BY id LIMIT ${HOOKS_PER_ROUND} FOR UPDATE SKIP LOCKED`,
      );
      let read = 0;
      for (const row of hooks) read += await this.fanOutHook(client, row, pick, pageSize);
      return read;
    });
  }

  private async fanOutHook(
    client: PoolClient,
    row: WebhookRow,
    pick: (hook: StoredWebhook, events: LoggedEvent[]) => LoggedEvent[],
    pageSize: number,
  ): Promise<number> {
    const hook = toWebhook(row);
    const filter = hookFilter(hook);
    // A change made before the hook existed is not its business, even when numbered after its creation
    // (the cursor starts at the head of that moment, and the sealer numbers what was pending a moment later).
    // The head first: an event numbered after this read has a greater id, so moving the cursor to it skips none.
    const { rows: heads } = await client.query<{ id: string }>('SELECT coalesce(max(id), 0) AS id FROM events');
    const head = heads[0]!.id;
    const { rows } = await client.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events
        WHERE id > $1 AND id <= $6 AND ($2::text IS NULL OR conversation_id = $2)
          AND ($3::text IS NULL OR owner = $3 OR owner IS NULL) AND type = ANY($4::text[]) AND at >= $7
        ORDER BY id LIMIT $5`,
      [row.cursor, filter.conversationId ?? null, filter.owner ?? null, hook.events, pageSize, head, row.created_at],
    );
    const events = rows.map(toEvent);
    const chosen = pick(hook, events);
    if (chosen.length > 0) {
      await client.query(
        `INSERT INTO webhook_deliveries (webhook_id, event_id, type, payload, next_attempt_at)
         SELECT $1, e.id, e.type, e.payload, now()
           FROM unnest($2::bigint[], $3::text[], $4::jsonb[]) AS e(id, type, payload)
         ON CONFLICT DO NOTHING`,
        [hook.id, chosen.map((e) => e.id), chosen.map((e) => e.type), chosen.map((e) => JSON.stringify(eventData(e)))],
      );
    }
    // A short page is the end: the cursor moves to the head, past the events filtered out in SQL.
    const cursor = events.length < pageSize ? head : String(events[events.length - 1]!.id);
    await client.query('UPDATE webhooks SET cursor = greatest(cursor, $2::bigint) WHERE id = $1', [hook.id, cursor]);
    return Math.max(events.length, 1);
  }

  async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const { rows } = await translated(
      this.pool.query<{
        webhook_id: string;
        event_id: string;
        type: EventType;
        payload: unknown;
        attempts: number;
        url: string;
        secret: string;
      }>(
        `WITH due AS (
           SELECT d.webhook_id, d.event_id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
            WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND w.enabled
            ORDER BY d.next_attempt_at, d.event_id LIMIT $1
            FOR UPDATE OF d SKIP LOCKED)
         UPDATE webhook_deliveries d
            SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
           FROM due, webhooks w
          WHERE d.webhook_id = due.webhook_id AND d.event_id = due.event_id AND w.id = d.webhook_id
         RETURNING d.webhook_id, d.event_id, d.type, d.payload, d.attempts, w.url, w.secret`,
        [limit, leaseMs],
      ),
    );
    return rows.map((r) => ({
      webhookId: r.webhook_id,
      eventId: Number(r.event_id),
      type: r.type,
      payload: r.payload,
      attempt: r.attempts,
      url: r.url,
      sealedSecret: r.secret,
    }));
  }

  async prune(olderThanMs: number): Promise<number> {
    const { rows } = await translated(
      this.pool.query<{ n: number }>(
        `WITH horizon AS (SELECT now() - make_interval(secs => $1::double precision / 1000) AS t),
         settled AS (
           DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < (SELECT t FROM horizon) RETURNING 1),
         logged AS (DELETE FROM webhook_attempts WHERE at < (SELECT t FROM horizon) RETURNING 1)
         SELECT (SELECT count(*) FROM settled)::int + (SELECT count(*) FROM logged)::int AS n`,
        [olderThanMs],
      ),
    );
    return rows[0]?.n ?? 0;
  }

  async settle(
    d: ClaimedDelivery,
    outcome: AttemptOutcome,
    retry: { retryInMs: number | undefined; disableAfterMs: number },
  ): Promise<void> {
    const status = outcome.ok ? 'delivered' : retry.retryInMs === undefined ? 'failed' : 'pending';
    await translated(
      this.pool.query(
        `WITH settled AS (
           UPDATE webhook_deliveries
              SET status = $3, next_attempt_at = now() + make_interval(secs => $4::double precision / 1000)
            WHERE webhook_id = $1 AND event_id = $2 AND status = 'pending'),
         logged AS (
           INSERT INTO webhook_attempts (webhook_id, event_id, type, attempt, status, response_status, error)
           VALUES ($1, $2, $5, $6, $7, $8, $9))
         UPDATE webhooks
            SET failing_since = CASE WHEN $10 THEN NULL ELSE coalesce(failing_since, now()) END,
                enabled = enabled AND ($10 OR coalesce(failing_since, now()) > now() - make_interval(secs => $11::double precision / 1000))
          WHERE id = $1`,
        [
          d.webhookId,
          d.eventId,
          status,
          retry.retryInMs ?? 0,
          d.type,
          d.attempt,
          outcome.ok ? 'delivered' : 'failed',
          outcome.responseStatus ?? null,
          outcome.error ?? null,
          outcome.ok,
          retry.disableAfterMs,
        ],
      ),
    );
  }
}
