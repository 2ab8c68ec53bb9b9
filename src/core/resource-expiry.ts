/**
 * The sweep of expired resources (API.md, "Shared context, M6", TTL): a
 * resource reads as missing from its `expiresAt` on (the store's statements
 * say so themselves); this deletes the rows, within 60 s of it.
 *
 * Every replica sweeps on its own timer; the store's SKIP LOCKED hands each
 * row to one of them. A batch is one transaction. The database's triggers
 * (migration 20260701000000) record each deletion in it, as event
 * `resource.expired` and as an audit entry by `expiry` in the conversation's
 * chain: they commit with the deletion or not at all, and a create that
 * takes an expired name over (no sweep involved) records the same.
 */
import type { AuditService } from './audit';
import { inOwnTransaction } from './in-transaction';
import type { ExpiredResource, ResourceStore, UnitsOfWork } from './ports';
import type { ToolLogger } from './tool-interface';

/** Rows per transaction: short row locks, and a bounded number of event and audit rows written with them. */
const BATCH = 200;
/** Batches per tick at most, so one tick ends; what is left waits for the next. */
const MAX_BATCHES = 50;

export interface ResourceExpiryDeps {
  store: ResourceStore;
  units: UnitsOfWork;
  /** Its queue is written before each batch, so that nothing queued earlier is sealed after the batch's entries. */
  audit?: AuditService;
  logger: ToolLogger;
  /** Between sweeps (RESOURCE_SWEEP_INTERVAL_MS). */
  intervalMs: number;
}

export class ResourceExpiry {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly deps: ResourceExpiryDeps) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.deps.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a sweep under way (shutdown: before the pool closes). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /**
   * Deletes what has expired, batch by batch; how many resources. A sweep
   * already under way is joined rather than doubled.
   */
  sweepOnce(): Promise<number> {
    this.running ??= this.sweep().finally(() => (this.running = undefined));
    return this.running;
  }

  private async tick(): Promise<void> {
    try {
      const n = await this.sweepOnce();
      if (n > 0) this.deps.logger.info({ expired: n }, 'resources: expired resources deleted');
    } catch (err) {
      // The database may be down for a moment: the next tick tries again, and reads honour expiry meanwhile.
      this.deps.logger.warn({ err }, 'resources: the expiry sweep failed');
    }
  }

  private async sweep(): Promise<number> {
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const n = (await this.batch()).length;
      total += n;
      if (n < BATCH) break;
    }
    return total;
  }

  private async batch(): Promise<ExpiredResource[]> {
    // What this replica queued before is written first: never sealed after these entries.
    await this.deps.audit?.flushQueued();
    return inOwnTransaction(this.deps.units, (tx) => this.deps.store.sweepExpired(BATCH, tx));
  }
}
