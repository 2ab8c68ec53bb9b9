/**
 * The webhooks' ports (API.md, "Approvals inbox, events and webhooks"):
 * their store (src/db/webhook-store.ts), which is also the durable outbox,
 * and the sender that signs and posts one message (src/http/webhook-sender.ts).
 */
import type { EventType, LoggedEvent } from './events';

export interface StoredWebhook {
  id: string;
  /** The subject whose visibility the hook has (its creator's). */
  owner: string;
  ownerRole: 'admin' | 'user';
  url: string;
  events: EventType[];
  conversationId: string | null;
  enabled: boolean;
  createdAt: number;
}

export interface NewWebhook extends Omit<StoredWebhook, 'enabled' | 'createdAt'> {
  /** The event id it starts after. */
  cursor: number;
  /** The signing secret, sealed: the store never sees it in the clear. */
  sealedSecret: string;
  /** The actor who created it (actorOf). */
  createdBy: string;
}

/** A message to deliver, claimed (leased) by this replica. */
export interface ClaimedDelivery {
  webhookId: string;
  eventId: number;
  type: EventType;
  /** The event's `data`: what is signed and sent. */
  payload: unknown;
  /** This attempt's number, from 1. */
  attempt: number;
  url: string;
  sealedSecret: string;
}

export interface AttemptOutcome {
  ok: boolean;
  /** The receiver's HTTP status, when it answered. */
  responseStatus?: number;
  /** Why it failed (no secret, no body). */
  error?: string;
}

/** One row of GET /webhooks/{id}/deliveries. */
export interface DeliveryAttempt {
  eventId: number;
  type: EventType;
  attempt: number;
  status: 'delivered' | 'failed';
  responseStatus?: number;
  at: number;
  error?: string;
}

export interface WebhookStore {
  insert(hook: NewWebhook): Promise<StoredWebhook>;
  get(id: string): Promise<StoredWebhook | undefined>;
  /** Every hook (owner undefined) or an owner's, newest first, at most `limit`. */
  list(owner: string | undefined, limit: number): Promise<StoredWebhook[]>;
  /** True when it existed. */
  delete(id: string): Promise<boolean>;
  attempts(id: string, limit: number): Promise<DeliveryAttempt[]>;
  /** The latest event id (a new hook starts after it). */
  head(): Promise<number>;
  /**
   * Turns the events past each enabled hook's cursor into deliveries, for
   * hooks no other replica is handling: `pick` says which of a page of
   * events (already coarsely filtered for the hook) become deliveries; the
   * deliveries and the new cursor commit together. Returns how many events
   * were read (0: nothing to do).
   */
  fanOut(pick: (hook: StoredWebhook, events: LoggedEvent[]) => LoggedEvent[], pageSize: number): Promise<number>;
  /** Claims up to `limit` due deliveries of enabled hooks, leasing each for `leaseMs`. */
  claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]>;
  /**
   * Records an attempt's outcome: delivered; or failed, retried after
   * `retryInMs` (undefined: given up). A hook failing for `disableAfterMs`
   * is disabled.
   */
  /** Forgets settled messages and logged attempts older than `olderThanMs`; how many rows. */
  prune(olderThanMs: number): Promise<number>;
  settle(
    d: ClaimedDelivery,
    outcome: AttemptOutcome,
    retry: { retryInMs: number | undefined; disableAfterMs: number },
  ): Promise<void>;
}

export interface WebhookMessage {
  url: string;
  /** `whsec_…` */
  secret: string;
  /** webhook-id: the same for every attempt of one message. */
  messageId: string;
  body: string;
  timeoutMs: number;
  /** Aborts the request (shutdown). */
  signal?: AbortSignal;
}

export interface WebhookSender {
  /** Signs (Standard Webhooks) and posts; never throws. */
  send(m: WebhookMessage): Promise<AttemptOutcome>;
}

/** Seals a secret at rest and opens it for signing (the participants' SecretBox). */
export interface SecretSealer {
  seal(secret: string): Promise<string>;
  open(sealed: string): Promise<string>;
}
