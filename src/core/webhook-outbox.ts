/**
 * The webhooks' outbox dispatcher (API.md, "Approvals inbox, events and
 * webhooks"): at-least-once, one replica sending each message.
 *
 * Two steps, each safe on any number of replicas:
 * 1. fan-out: the events past each hook's cursor that its owner may see
 *    (canSeeEvent, the rule of GET /events) and that it asked for become
 *    delivery rows, committed with the cursor (the store locks each hook
 *    FOR UPDATE SKIP LOCKED, so one replica handles a hook at a time);
 * 2. delivery: due rows are claimed (SKIP LOCKED) and leased past the
 *    request's timeout, then sent and settled: delivered, or retried on the
 *    Standard Webhooks schedule, the hook disabled after 24 h of failures.
 *    A replica killed mid-send leaves a lease that lapses: another attempt.
 *
 * It wakes on every event this replica's feed reads (first attempt within
 * 1 s), and on a timer for retries coming due.
 */
import { OutboxRounds } from './outbox-rounds';
import { canSeeEvent, replayFilter } from './event-access';
import type { EventFeed } from './events';
import type { LoggedEvent } from './ports/events';
import type { ClaimedDelivery, SecretSealer, StoredWebhook, WebhookSender, WebhookStore } from './ports/webhooks';
import type { ToolLogger } from './tool-interface';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** After the first attempt: the Standard Webhooks retry schedule. */
export const RETRY_SCHEDULE_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR];
export const DISABLE_AFTER_MS = 24 * HOUR;

export interface WebhookOutboxOptions {
  store: WebhookStore;
  feed: EventFeed;
  sender: WebhookSender;
  sealer: SecretSealer;
  logger: ToolLogger;
  /** A 2xx within this is a success (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Retry delays after each failed attempt; shorter in tests. */
  retryScheduleMs?: readonly number[];
  disableAfterMs?: number;
  /** How often due retries are looked for. */
  sweepMs?: number;
  /** Releases what the sender holds (its connections), after the last delivery. */
  close?: () => Promise<void>;
}

/** The delivery log and settled messages are kept this long (the log shows the last 100 attempts). */
const KEEP_MS = 7 * 24 * HOUR;
/** How often a replica prunes them (any replica may: the deletes are idempotent). */
const PRUNE_EVERY_MS = HOUR;

/** Messages sent at once by one replica. */
const CONCURRENCY = 16;
/** Events read per hook per fan-out. */
const PAGE = 500;

export class WebhookOutbox {
  private unlisten: (() => void) | undefined;
  private closed = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly rounds: OutboxRounds;
  /** Aborts the sends in flight at close: their leases lapse and another attempt is made later. */
  private stopping = new AbortController();

  constructor(private readonly opts: WebhookOutboxOptions) {
    this.rounds = new OutboxRounds({
      round: () => this.round(),
      prune: () => opts.store.prune(KEEP_MS),
      pruneEveryMs: PRUNE_EVERY_MS,
      everyMs: opts.sweepMs ?? SECOND,
      logger: opts.logger,
      what: 'webhooks',
    });
  }

  /** Starts listening to the feed and sweeping; then works off what is waiting (a restart resumes here). */
  async start(): Promise<void> {
    this.closed = false;
    this.stopping = new AbortController();
    this.unlisten = await this.opts.feed.listen(() => this.wake());
    this.rounds.start();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    this.unlisten?.();
    this.unlisten = undefined;
    await this.rounds.stop();
    await Promise.allSettled([...this.inFlight]);
    await this.opts.close?.().catch(() => undefined);
  }

  /** Something may be waiting: runs a round now (or right after the current one). */
  wake(): void {
    this.rounds.wake();
  }

  private async round(): Promise<void> {
    while (
      !this.closed &&
      (await this.opts.store.fanOut((hook, events) => events.filter((e) => wants(hook, e)), PAGE)) > 0
    );
    while (!this.closed) {
      const free = CONCURRENCY - this.inFlight.size;
      if (free <= 0) {
        await Promise.race(this.inFlight);
        continue;
      }
      const claimed = await this.opts.store.claim(free, this.leaseMs);
      for (const d of claimed) {
        const sending = this.deliver(d).finally(() => this.inFlight.delete(sending));
        this.inFlight.add(sending);
      }
      if (claimed.length < free) break;
    }
  }

  /** Past the request's timeout, with room for the settling write. */
  private get leaseMs(): number {
    return this.opts.timeoutMs * 2 + SECOND;
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    try {
      const outcome = await this.opts.sender.send({
        url: d.url,
        secret: await this.opts.sealer.open(d.sealedSecret),
        messageId: messageId(d),
        body: JSON.stringify(d.payload),
        timeoutMs: this.opts.timeoutMs,
        signal: this.stopping.signal,
      });
      // Cut short by the shutdown: no verdict on the receiver (the lease lapses, another attempt follows).
      if (this.closed) return;
      const schedule = this.opts.retryScheduleMs ?? RETRY_SCHEDULE_MS;
      await this.opts.store.settle(d, outcome, {
        retryInMs: schedule[d.attempt - 1],
        disableAfterMs: this.opts.disableAfterMs ?? DISABLE_AFTER_MS,
      });
    } catch (err) {
      // The lease lapses and another attempt is made.
      this.opts.logger.warn(
        { err, webhook: d.webhookId, event: d.eventId },
        'webhooks: a delivery could not be settled',
      );
    }
  }
}

/** webhook-id: one per (hook, event), the same on every attempt, so a receiver can drop duplicates. */
export function messageId(d: { webhookId: string; eventId: number }): string {
  return `msg_${d.webhookId}_${d.eventId}`;
}

/** Its owner may see the event (as on GET /events), of its conversation when it has one, of a type it asked for. */
function wants(hook: StoredWebhook, e: LoggedEvent): boolean {
  if (!hook.events.includes(e.type)) return false;
  return canSeeEvent(scopeOf(hook), e);
}

export function scopeOf(hook: StoredWebhook): Parameters<typeof canSeeEvent>[0] {
  return {
    principal: { role: hook.ownerRole, subject: hook.owner },
    ...(hook.conversationId !== null ? { conversationId: hook.conversationId } : {}),
  };
}

/** The coarse filter for reading a hook's events (canSeeEvent still decides each). */
export function hookFilter(hook: StoredWebhook): ReturnType<typeof replayFilter> {
  return replayFilter(scopeOf(hook));
}

/** The body of a delivery: the event's `data`, as GET /events sends it. */
export function eventData(e: LoggedEvent): {
  type: string;
  conversationId: string | null;
  at: number;
  subject: unknown;
} {
  return { type: e.type, conversationId: e.conversationId, at: e.at, subject: e.subject };
}
