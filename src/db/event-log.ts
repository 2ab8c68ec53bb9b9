/**
 * The EventLog port (src/core/ports/events.ts) in SQL. The events themselves
 * are written by the database (triggers of migration 20260407000000, in the
 * transaction of each change); this reads them, one round trip per poll
 * (events_poll numbers what is pending first, when no other replica is), and
 * shapes each subject as the API shows it, with the stores' own mappers.
 */
import type { Pool } from 'pg';
import type { EventLog, EventType, LoggedEvent, ReplayFilter } from '../core/ports';
import type { Queryable } from './sql';
import { type ApprovalRow, toApproval } from './approval-store';
import { prepared, translated } from './sql';
import { type ResourceRow, toResource } from './resource-store';

export interface EventRow {
  id: string;
  at: Date;
  conversation_id: string | null;
  owner: string | null;
  known: boolean;
  type: EventType;
  /** The row as the trigger recorded it (jsonb: timestamps as ISO strings). */
  subject: Record<string, unknown>;
}

export const EVENT_COLUMNS = 'id, at, conversation_id, owner, known, type, subject';

const date = (v: unknown): Date | null => (typeof v === 'string' ? new Date(v) : null);

/** The subject as the API shows it: an Approval, a Resource without data, a permission change; others as recorded. */
function subjectOf(type: EventType, s: Record<string, unknown>): unknown {
  if (type.startsWith('approval.')) {
    return toApproval({
      ...(s as unknown as ApprovalRow),
      created_at: date(s.created_at)!,
      expires_at: date(s.expires_at),
      decided_at: date(s.decided_at),
    });
  }
  if (type.startsWith('resource.')) {
    const { data: _data, ...resource } = toResource({
      ...(s as unknown as ResourceRow),
      created_at: date(s.created_at)!,
      updated_at: date(s.updated_at)!,
      expires_at: date(s.expires_at),
    });
    return resource;
  }
  if (type === 'permission.changed') {
    return { tool: s.tool, fromLevel: s.from_level, toLevel: s.to_level, at: date(s.at)!.getTime(), actor: s.actor };
  }
  return s;
}

export function toEvent(r: EventRow): LoggedEvent {
  return {
    id: Number(r.id),
    type: r.type,
    conversationId: r.conversation_id,
    at: r.at.getTime(),
    owner: r.known ? r.owner : undefined,
    subject: subjectOf(r.type, r.subject),
  };
}

export class SqlEventLog implements EventLog {
  constructor(private readonly pool: Pool) {}

  async poll(after: number, limit: number): Promise<LoggedEvent[]> {
    const { rows } = await prepared<EventRow>(
      this.pool,
      'events_poll',
      `SELECT ${EVENT_COLUMNS} FROM events_poll($1, $2)`,
      [after, limit],
    );
    return rows.map(toEvent);
  }

  async replay(after: number, upTo: number, filter: ReplayFilter, limit: number): Promise<LoggedEvent[]> {
    const { rows } = await prepared<EventRow>(
      this.pool,
      'events_replay',
      `SELECT ${EVENT_COLUMNS} FROM events
         WHERE id > $1 AND id <= $2 AND ($3::text IS NULL OR conversation_id = $3)
           AND ($4::text IS NULL OR owner = $4 OR owner IS NULL)
         ORDER BY id LIMIT $5`,
      [after, upTo, filter.conversationId ?? null, filter.owner ?? null, limit],
    );
    return rows.map(toEvent);
  }

  async head(): Promise<number> {
    // Past the purged ones too: with every event purged, a new one still comes after them.
    const { rows } = await translated(
      this.pool.query<{ id: string }>(
        'SELECT greatest((SELECT max(id) FROM events), (SELECT purged_through FROM event_horizon WHERE id = 1), 0) AS id',
      ),
    );
    return Number(rows[0]?.id ?? 0);
  }

  async horizon(): Promise<number> {
    const { rows } = await translated(
      this.pool.query<{ id: string }>('SELECT purged_through AS id FROM event_horizon WHERE id = 1'),
    );
    return Number(rows[0]?.id ?? 0);
  }

  async purge(hours: number): Promise<number> {
    const { rows } = await translated(
      this.pool.query<{ n: number }>('SELECT events_purge(make_interval(hours => $1)) AS n', [hours]),
    );
    return rows[0]?.n ?? 0;
  }
}

/**
 * Records an event the triggers do not see (the participants' status and
 * quarantined actions: `conversationId` null), in `q`'s transaction when it
 * is one. It is numbered and delivered like every other.
 */
export async function recordEvent(
  q: Queryable,
  e: { conversationId: string | null; type: EventType; subject: object },
): Promise<void> {
  await translated(
    q.query('INSERT INTO event_pending (conversation_id, type, subject) VALUES ($1, $2, $3)', [
      e.conversationId,
      e.type,
      JSON.stringify(e.subject),
    ]),
  );
}
