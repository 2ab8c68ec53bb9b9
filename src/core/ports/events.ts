/**
 * The event log's port (src/core/events.ts reads it; src/db/event-log.ts
 * implements it): committed changes as events with global, increasing ids.
 */

/** The event types of API.md ("Approvals inbox, events and webhooks"). */
export const EVENT_TYPES = [
  'approval.requested',
  'approval.decided',
  'approval.expired',
  'permission.changed',
  'resource.created',
  'resource.updated',
  'resource.deleted',
  'resource.expired',
  // Recorded by the participants' code (no conversation: conversationId null), when it lands.
  'participant.status_changed',
  'participant.action_quarantined',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** One event as the log keeps it. */
export interface LoggedEvent {
  /** Global and increasing: what SSE sends as `id` and takes back as Last-Event-ID. */
  id: number;
  type: EventType;
  /** Null for an event of no conversation (a participant's). */
  conversationId: string | null;
  /** Epoch milliseconds: when the change was made. */
  at: number;
  /**
   * The conversation's owner when the event was numbered: a subject, null for
   * a conversation from before identities, undefined when the conversation
   * was gone by then (only admins see such an event).
   */
  owner: string | null | undefined;
  /** The approval, the resource without its data, the permission change, or the participant. */
  subject: unknown;
}

/** Which events a replay may return (a coarse filter: the caller still checks each one). */
export interface ReplayFilter {
  /** Only this conversation's. */
  conversationId?: string;
  /** Only conversations of this owner, plus ownerless ones and those of no conversation. */
  owner?: string;
}

export interface EventLog {
  /**
   * The events after `after`, oldest first, at most `limit`; numbers what is
   * pending first when no other replica is doing so (one round trip).
   */
  poll(after: number, limit: number): Promise<LoggedEvent[]>;
  /** The events in (after, upTo] that pass the filter, oldest first, at most `limit`. */
  replay(after: number, upTo: number, filter: ReplayFilter, limit: number): Promise<LoggedEvent[]>;
  /** The highest id numbered so far (0: none). */
  head(): Promise<number>;
  /** Events up to this id were purged (0: none): a resume from before it missed some. */
  horizon(): Promise<number>;
  /** Forgets events older than `hours` (one replica at a time); how many. */
  purge(hours: number): Promise<number>;
}

/** Tells the feed that events may be waiting (another replica's notification). */
export interface EventWakeups {
  /** Starts listening; `wake` may be called any number of times. */
  start(wake: () => void): void;
  stop(): Promise<void>;
}
