/**
 * The subscriptions' runner (API.md, "Shared context, M6", Subscriptions):
 * tools' handlers for the resource events of a conversation, run after the
 * change committed, at least once, in commit order per conversation, by one
 * replica each. Built as the webhooks' outbox is (webhook-outbox.ts):
 * 1. fan-out: the resource events past the cursor become one delivery per
 *    subscribed tool whose names match (and whose level suffices then),
 *    committed with the cursor by one replica at a time;
 * 2. delivery: a conversation's first pending delivery is claimed (SKIP
 *    LOCKED) and leased past the tool timeout, then its handler runs as the
 *    tool, in a unit of work that also marks the delivery done (fenced on the
 *    attempt: a replica whose lease lapsed, killed or too slow, commits
 *    nothing). A failure is retried on `retryScheduleMs`, then recorded as
 *    failed; the conversation's next event waits until then.
 *
 * A handler's writes raise events too, one level deeper (the store sets the
 * depth in the handler's transaction); an event deeper than MAX_DEPTH is
 * not handled: its deliveries are recorded as cut.
 */
import { OutboxRounds } from './outbox-rounds';
import { toolContextOf } from './action-execution';
import { isUnavailable } from './errors';
import type { AuditService } from './audit';
import type { EventFeed } from './events';
import type { LoggedEvent, UnitsOfWork } from './ports';
import type { ClaimedSubscription, SubscriptionStore, SubscriptionTarget } from './ports/subscriptions';
import type { ResourceService } from './resource-service';
import { ConversationSharedContext } from './shared-context';
import { TIMED_OUT, withTimeout } from './action-execution';
import { ToolError, type ResourceEvent, type ResourceEventType, type ToolLogger } from './tool-interface';
import type { LoadedTool } from './tool-module';
import { type LoadedSubscription, matchesName } from './tool-subscriptions';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** After each failed attempt: 5 retries, then the delivery is given up (API.md). */
export const SUBSCRIPTION_RETRY_MS = [1 * SECOND, 5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE];
/** A chain of handlers deeper than this is cut (API.md). */
export const MAX_DEPTH = 8;

export interface SubscriptionRunnerOptions {
  store: SubscriptionStore;
  feed: EventFeed;
  /** The tools now loaded (the registry's current set); undefined before the first load. */
  tools: () => readonly LoadedTool[] | undefined;
  units: UnitsOfWork;
  resources: ResourceService;
  audit: AuditService;
  logger: ToolLogger;
  exportDir: string;
  /** A handler still running after this fails its attempt (TOOL_TIMEOUT_MS). */
  toolTimeoutMs: number;
  /** Retry delays after each failed attempt; shorter in tests. */
  retryScheduleMs?: readonly number[];
  /** How often due retries are looked for. */
  sweepMs?: number;
}

/** Deliveries (of different conversations) run at once by one replica. */
const CONCURRENCY = 8;
/** Events read per fan-out. */
const PAGE = 500;
/** Settled deliveries are kept this long (failures are listed from them). */
const KEEP_MS = 7 * 24 * 60 * MINUTE;
const PRUNE_EVERY_MS = 60 * MINUTE;

export class SubscriptionRunner {
  private unlisten: (() => void) | undefined;
  private closed = true;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly rounds: OutboxRounds;

  constructor(private readonly opts: SubscriptionRunnerOptions) {
    this.rounds = new OutboxRounds({
      round: () => this.round(),
      prune: () => opts.store.prune(KEEP_MS),
      pruneEveryMs: PRUNE_EVERY_MS,
      everyMs: opts.sweepMs ?? SECOND,
      logger: opts.logger,
      what: 'subscriptions',
    });
  }

  /** Starts listening to the feed and sweeping; then works off what is waiting (a restart resumes here). */
  async start(): Promise<void> {
    this.closed = false;
    this.unlisten = await this.opts.feed.listen((e) => {
      if (e.type.startsWith('resource.')) this.wake();
    });
    this.rounds.start();
  }

  /** Stops taking work and waits for the handlers running (their leases would otherwise lapse into a retry). */
  async close(): Promise<void> {
    this.closed = true;
    this.unlisten?.();
    this.unlisten = undefined;
    await this.rounds.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  /** Something may be waiting: runs a round now (or right after the current one). */
  wake(): void {
    this.rounds.wake();
  }

  private async round(): Promise<void> {
    const tools = this.opts.tools();
    // Before the tools load, no event can be matched to its handlers: the cursor stays where it is.
    if (tools === undefined) return;
    while (!this.closed && (await this.opts.store.fanOut((e) => targetsOf(tools, e), PAGE, MAX_DEPTH)) > 0);
    while (!this.closed) {
      const free = CONCURRENCY - this.inFlight.size;
      if (free <= 0) return;
      const claimed = await this.opts.store.claim(free, this.leaseMs);
      for (const d of claimed) {
        const running = this.deliver(d).finally(() => {
          this.inFlight.delete(running);
          // The conversation's next event may run now.
          this.wake();
        });
        this.inFlight.add(running);
      }
      if (claimed.length < free) return;
    }
  }

  /** Past the handler's timeout, with room for its commit. */
  private get leaseMs(): number {
    return this.opts.toolTimeoutMs * 2 + 5 * SECOND;
  }

  private async deliver(d: ClaimedSubscription): Promise<void> {
    try {
      const outcome = await this.runHandler(d);
      if (outcome === undefined) return;
      const retryInMs = (this.opts.retryScheduleMs ?? SUBSCRIPTION_RETRY_MS)[d.attempt - 1];
      await this.opts.store.fail(d, outcome.error, retryInMs);
      if (retryInMs === undefined) await this.audited(d, outcome.code);
    } catch (err) {
      // The lease lapses and another attempt is made.
      this.opts.logger.warn({ err, tool: d.tool, event: d.eventId }, 'subscriptions: a delivery could not be settled');
    }
  }

  /** Runs the handler as its tool in one unit of work; undefined when settled, else why it failed. */
  private async runHandler(d: ClaimedSubscription): Promise<{ code: string; error: string } | undefined> {
    const tool = this.opts.tools()?.find((t) => t.name === d.tool);
    const sub = tool && subscriptionOf(tool, d.type);
    const unit = this.opts.units.start();
    const tx = await unit.transaction();
    try {
      const level = await this.opts.store.begin(tx, d, d.depth + 1);
      // Unloaded since, no longer subscribed, or its level lowered: not run, and not a failure.
      if (!sub || level === undefined || level < sub.level) {
        await this.opts.store.complete(tx, d, 'skipped');
        await unit.commit();
        return undefined;
      }
      const shared = new ConversationSharedContext({
        conversationId: d.conversationId,
        toolName: d.tool,
        resources: this.opts.resources,
        unit,
      });
      const ctx = toolContextOf(
        this.opts,
        { conversationId: d.conversationId, action: { tool: d.tool, name: d.type }, args: {} },
        shared,
      );
      const stop = new AbortController();
      const running = Promise.resolve().then(() => sub.handler(eventOf(d), ctx, stop.signal));
      running.catch(() => undefined);
      const output = await withTimeout(running, this.opts.toolTimeoutMs);
      if (output === TIMED_OUT) {
        stop.abort();
        await unit.abandon();
        return {
          code: 'tool_error',
          error: `tool_error: the handler did not finish within ${this.opts.toolTimeoutMs} ms`,
        };
      }
      if (shared.conflicted) throw new Error('transaction aborted by a deadlock or serialization failure');
      await this.opts.audit.record('subscription.handled', this.fields(d, 'success'), tx);
      // The lease lapsed and another attempt took over: nothing of this one commits.
      if (!(await this.opts.store.complete(tx, d, 'done'))) {
        await unit.rollback();
        return undefined;
      }
      await unit.commit();
      return undefined;
    } catch (err) {
      await unit.rollback();
      if (err instanceof ToolError) return { code: err.code, error: `${err.code}: ${err.message}` };
      // The database's trouble is not the handler's: no verdict, the lease lapses and another attempt follows.
      if (isUnavailable(err)) throw err;
      this.opts.logger.error({ err, tool: d.tool, event: d.eventId }, 'subscription handler threw');
      return { code: 'tool_error', error: `tool_error: Tool ${d.tool} failed while handling ${d.type}` };
    }
  }

  private fields(d: ClaimedSubscription, outcome: string): Parameters<AuditService['record']>[1] {
    // On behalf of the event: its id stands where a request's id would.
    return {
      conversationId: d.conversationId,
      actor: `tool:${d.tool}`,
      requestId: `event:${d.eventId}`,
      outcome,
      tool: d.tool,
      action: d.type,
    };
  }

  /** A delivery given up: its entry, committed now. */
  private async audited(d: ClaimedSubscription, code: string): Promise<void> {
    await this.opts.audit.record('subscription.handled', this.fields(d, code));
  }
}

/** The loaded tools whose handlers want this event. */
function targetsOf(tools: readonly LoadedTool[], e: LoggedEvent): SubscriptionTarget[] {
  const name = (e.subject as { name?: unknown }).name;
  if (typeof name !== 'string') return [];
  return tools.flatMap((tool) => {
    const s = subscriptionOf(tool, e.type);
    return s && matchesName(s, name) ? [{ tool: tool.name, level: s.level }] : [];
  });
}

function subscriptionOf(tool: LoadedTool, type: string): LoadedSubscription | undefined {
  return tool.subscriptions?.find((s) => s.type === type);
}

/** The event as GET /events gives it. */
function eventOf(d: ClaimedSubscription): ResourceEvent {
  return {
    id: d.eventId,
    type: d.type as ResourceEventType,
    conversationId: d.conversationId,
    at: d.at,
    subject: d.subject as ResourceEvent['subject'],
  };
}
