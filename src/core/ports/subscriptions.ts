/**
 * The subscriptions' outbox port (API.md, "Shared context, M6",
 * Subscriptions): src/db/subscription-store.ts keeps it; the runner
 * (src/core/subscriptions.ts) fans events out, claims deliveries, and settles
 * them. The locking that makes one replica run each delivery, in commit
 * order per conversation, is the store's.
 */
import type { LoggedEvent } from './events';
import type { Transaction } from './units';

/** A handler a page's event should reach: its tool, and the level the tool must have then. */
export interface SubscriptionTarget {
  tool: string;
  level: number;
}

/** One delivery claimed (leased) by this replica. */
export interface ClaimedSubscription {
  eventId: number;
  tool: string;
  conversationId: string;
  type: string;
  /** Epoch ms of the change. */
  at: number;
  /** The resource without its data, as GET /events gives it. */
  subject: unknown;
  /** Of the event: 0 for a change no handler made. */
  depth: number;
  /** This attempt's number, from 1. */
  attempt: number;
}

/** One row of GET /conversations/{id}/subscriptions/failures. */
export interface SubscriptionFailure {
  eventId: number;
  type: string;
  tool: string;
  /** The resource the event was about. */
  resource: string;
  /** `failed`: retried and given up; `cut`: the chain of handlers was deeper than the limit. */
  status: 'failed' | 'cut';
  attempts: number;
  error: string;
  /** Epoch ms when it was given up. */
  at: number;
}

export interface SubscriptionStore {
  /**
   * Turns the resource events past the cursor into deliveries (when no other
   * replica is doing so): `targets` names the handlers each event should
   * reach; a tool whose level in the conversation is then below the given
   * level gets none. An event deeper than `maxDepth` gets its deliveries
   * recorded as `cut`. Deliveries and the cursor commit together. Returns how
   * many events were read (0: nothing to do).
   */
  fanOut(targets: (e: LoggedEvent) => SubscriptionTarget[], pageSize: number, maxDepth: number): Promise<number>;
  /**
   * Claims up to `limit` due deliveries that are each their conversation's
   * first pending one, leasing each for `leaseMs`.
   */
  claim(limit: number, leaseMs: number): Promise<ClaimedSubscription[]>;
  /**
   * First statement of a handler's transaction: its writes raise events of
   * depth `depth`; answers the tool's level in the conversation now
   * (undefined: the conversation is gone).
   */
  begin(tx: Transaction, d: ClaimedSubscription, depth: number): Promise<number | undefined>;
  /**
   * Last statement of a handler's transaction: the delivery is done, if this
   * attempt still holds it (false: the lease lapsed and another attempt took
   * it; the caller must roll back).
   */
  complete(tx: Transaction, d: ClaimedSubscription, status: 'done' | 'skipped'): Promise<boolean>;
  /** A failed attempt: retried after `retryInMs`, or (undefined) given up as `failed`. */
  fail(d: ClaimedSubscription, error: string, retryInMs: number | undefined): Promise<void>;
  /** The conversation's failed and cut deliveries, newest first. */
  failures(conversationId: string, limit: number): Promise<SubscriptionFailure[]>;
  /** Forgets settled deliveries older than `olderThanMs`; how many. */
  prune(olderThanMs: number): Promise<number>;
}
