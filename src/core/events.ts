/**
 * The event feed (API.md, "Approvals inbox, events and webhooks"): one reader
 * per replica fans the event log out to every open stream of that replica.
 *
 * The log (src/db/event-log.ts) is a projection of committed changes made by
 * the database itself (triggers, migration 20260407000000), so recording an
 * event adds no statement to negotiate's path. Each replica reads it with one
 * poll every `pollMs` (one indexed query, whatever the number of
 * subscribers), and at once when told that something is waiting (an approval,
 * or a batch another replica numbered: EventWakeups). Each event is checked
 * against each candidate subscriber's right to see it (canSeeEvent) and handed
 * to its sink; a subscriber that resumes (Last-Event-ID) is first replayed
 * from the log, while what arrives meanwhile waits in its buffer.
 *
 * In-process consumers (held calls, a webhook outbox) read the same events
 * through listen(): every event of the log, unfiltered, in id order.
 */
import { type StreamScope, canSeeEvent, replayFilter } from './event-access';
import type { EventLog, EventWakeups, LoggedEvent } from './ports/events';
import type { ToolLogger } from './tool-interface';

export { type StreamScope, canSeeEvent, streamScope } from './event-access';

/** Where one stream's events go (src/http/event-stream.ts writes them as SSE). */
export interface EventSink {
  /**
   * Hands over one event; false while the client has not taken what was sent
   * (a replay then waits for drained()). A client too far behind is
   * disconnected by the sink itself: it resumes later with Last-Event-ID.
   */
  send(e: LoggedEvent): boolean;
  /** A note for the client (an SSE comment). */
  comment(text: string): void;
  /** Resolves once the client has taken what was sent (paces a replay). */
  drained(): Promise<void>;
  end(): void;
}

export interface EventFeedOptions {
  /** How often the log is read while someone listens (a wake-up reads it at once). */
  pollMs: number;
  /** EVENTS_RETENTION_HOURS: older events are purged. */
  retentionHours: number;
  logger: ToolLogger;
}

/** Events read per poll and per replay page. */
const BATCH = 500;
/** How often a replica that reads the log also purges it (one replica at a time does). */
const PURGE_EVERY_MS = 60_000;
/** Live events held for a subscriber still replaying; past this it is ended and resumes later. */
const MAX_BUFFERED = 10_000;

interface Subscriber {
  scope: StreamScope;
  sink: EventSink;
  /** The highest id handed over (or skipped as already seen). */
  lastSent: number;
  /** Live events waiting while the subscriber is replayed. */
  buffer: LoggedEvent[] | undefined;
  closed: boolean;
}

export interface Subscription {
  /** Stops delivering (the client went away); idempotent. */
  close(): void;
}

export class EventFeed {
  /** The highest id this replica has read. */
  private position = 0;
  private started: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private pollAgain = false;
  private lastPurge = 0;
  private held = false;
  private closed = false;
  /** Counts ensureStarted's starts: a start that finishes after a newer one (or a stop) does nothing. */
  private starts = 0;
  /** Subscribers by the index that finds them: `conv:ID`, `admin`, `user:SUBJECT`. */
  private readonly index = new Map<string, Set<Subscriber>>();
  private subscribers = 0;
  private readonly listeners = new Set<(e: LoggedEvent) => void>();

  constructor(
    private readonly log: EventLog,
    private readonly opts: EventFeedOptions,
    private readonly wakeups?: EventWakeups,
  ) {}

  /** Open streams of this replica. */
  get size(): number {
    return this.subscribers;
  }

  /** Reads the log for the replica's whole life, not only while a stream is open (the entry file calls it). */
  hold(): void {
    this.held = true;
    void this.ensureStarted().catch((err: unknown) =>
      this.opts.logger.warn({ err }, 'events: the feed could not start'),
    );
  }

  /**
   * Every event of the log from now on, unfiltered, in id order (held calls,
   * a webhook outbox). Returns the unsubscribe.
   */
  async listen(listener: (e: LoggedEvent) => void): Promise<() => void> {
    this.listeners.add(listener);
    await this.ensureStarted();
    return () => {
      this.listeners.delete(listener);
      this.stopWhenIdle();
    };
  }

  /** Resolves once the log can be read (a stream then starts without failing on it); rejects when it cannot. */
  ready(): Promise<void> {
    return this.ensureStarted();
  }

  /**
   * Starts a stream: events after `lastEventId` (replayed from the log, then
   * live), or from now without it. Rejects when the log cannot be read.
   */
  async subscribe(scope: StreamScope, lastEventId: number | undefined, sink: EventSink): Promise<Subscription> {
    await this.ensureStarted();
    const sub: Subscriber = { scope, sink, lastSent: this.position, buffer: undefined, closed: false };
    const key = indexKey(scope);
    let set = this.index.get(key);
    if (!set) this.index.set(key, (set = new Set()));
    set.add(sub);
    this.subscribers++;
    this.schedule(this.opts.pollMs);
    const subscription: Subscription = {
      close: () => {
        if (sub.closed) return;
        sub.closed = true;
        this.subscribers--;
        set.delete(sub);
        if (set.size === 0) this.index.delete(key);
        this.stopWhenIdle();
      },
    };
    if (lastEventId !== undefined) {
      if (lastEventId >= this.position) sub.lastSent = lastEventId;
      else {
        sub.buffer = [];
        this.catchUp(sub, lastEventId, this.position).catch((err: unknown) => {
          this.opts.logger.warn({ err }, 'events: replaying a resumed stream failed');
          sub.sink.end();
        });
      }
    }
    return subscription;
  }

  /** Something may be waiting in the log (a notification): read it now. */
  wake(): void {
    if (this.started === undefined || this.closed) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    void this.poll();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const set of this.index.values()) {
      for (const sub of set) {
        sub.closed = true;
        sub.sink.end();
      }
    }
    this.index.clear();
    this.subscribers = 0;
    await this.stop();
  }

  private ensureStarted(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the event feed is closed'));
    if (this.started) return this.started;
    const generation = ++this.starts;
    this.started = (async () => {
      this.position = await this.log.head();
      // Stopped (or closed, or stopped and started again) while the head was read: wake-ups
      // started now would run on with nobody to stop them.
      if (this.started === undefined || generation !== this.starts) return;
      this.wakeups?.start(() => this.wake());
      this.schedule(this.opts.pollMs);
    })().catch((err: unknown) => {
      if (generation === this.starts) this.started = undefined;
      throw err;
    });
    return this.started;
  }

  private get active(): boolean {
    return this.held || this.subscribers > 0 || this.listeners.size > 0;
  }

  private stopWhenIdle(): void {
    if (!this.active) void this.stop();
  }

  private async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.started === undefined) return;
    this.started = undefined;
    await this.wakeups?.stop();
  }

  private schedule(delay: number): void {
    if (this.timer || this.closed || this.started === undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, delay);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    try {
      for (;;) {
        const batch = await this.log.poll(this.position, BATCH);
        for (const e of batch) {
          this.position = e.id;
          this.dispatch(e);
        }
        if (batch.length < BATCH) break;
      }
      if (Date.now() - this.lastPurge >= PURGE_EVERY_MS) {
        this.lastPurge = Date.now();
        await this.log.purge(this.opts.retentionHours);
      }
    } catch (err) {
      // The database may be away for a moment: the next poll tries again from the same position.
      this.opts.logger.warn({ err }, 'events: reading the event log failed');
    } finally {
      this.polling = false;
    }
    if (this.pollAgain) {
      this.pollAgain = false;
      this.schedule(0);
    } else if (this.active) this.schedule(this.opts.pollMs);
    // Started for a stream that never opened (ready() alone): nothing holds the LISTEN connection open.
    else void this.stop();
  }

  /** One event to the listeners and to the subscribers that may see it (each found by its index). */
  private dispatch(e: LoggedEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(e);
      } catch (err) {
        this.opts.logger.warn({ err }, 'events: a listener failed');
      }
    }
    const keys = ['admin'];
    if (e.conversationId !== null) {
      keys.push(`conv:${e.conversationId}`);
      if (typeof e.owner === 'string') keys.push(`user:${e.owner}`);
    } else {
      for (const key of this.index.keys()) if (key.startsWith('user:')) keys.push(key);
    }
    for (const key of keys) {
      const set = this.index.get(key);
      if (set) for (const sub of [...set]) this.deliver(sub, e);
    }
  }

  private deliver(sub: Subscriber, e: LoggedEvent): void {
    if (sub.closed || e.id <= sub.lastSent || !canSeeEvent(sub.scope, e)) return;
    if (sub.buffer) {
      if (sub.buffer.length < MAX_BUFFERED) sub.buffer.push(e);
      else sub.sink.end();
      return;
    }
    sub.lastSent = e.id;
    sub.sink.send(e);
  }

  /** Replays (from, upTo] from the log, page by page at the client's pace, then what arrived meanwhile. */
  private async catchUp(sub: Subscriber, from: number, upTo: number): Promise<void> {
    const horizon = await this.log.horizon();
    if (from < horizon) {
      sub.sink.comment(
        `events up to id ${horizon} were older than EVENTS_RETENTION_HOURS (${this.opts.retentionHours}) and are gone; ` +
          'resuming from the oldest kept',
      );
    }
    const filter = replayFilter(sub.scope);
    let after = from;
    while (!sub.closed) {
      const page = await this.log.replay(after, upTo, filter, BATCH);
      for (const e of page) {
        after = e.id;
        if (canSeeEvent(sub.scope, e) && !sub.sink.send(e)) await sub.sink.drained();
      }
      if (page.length < BATCH) break;
      await sub.sink.drained();
    }
    const waiting = sub.buffer ?? [];
    sub.buffer = undefined;
    sub.lastSent = upTo;
    for (const e of waiting) this.deliver(sub, e);
  }
}

function indexKey(scope: StreamScope): string {
  if (scope.conversationId !== undefined) return `conv:${scope.conversationId}`;
  return scope.principal.role === 'admin' ? 'admin' : `user:${scope.principal.subject}`;
}
