/**
 * The rounds of an outbox's dispatcher (the webhooks' and the subscriptions'):
 * one round at a time on a replica, run when woken (a wake during a round
 * asks for one more right after it, however many came) and every `everyMs`
 * (retries coming due, leases lapsed), settled rows pruned at most once per
 * `pruneEveryMs` before a round. What a round does is the dispatcher's.
 */
import type { ToolLogger } from './tool-interface';

export interface OutboxRoundsOptions {
  round: () => Promise<void>;
  prune: () => Promise<unknown>;
  pruneEveryMs: number;
  everyMs: number;
  logger: ToolLogger;
  /** Names the dispatcher in the log line of a failed round. */
  what: string;
}

export class OutboxRounds {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private lastPrune = 0;
  private closed = true;

  constructor(private readonly o: OutboxRoundsOptions) {}

  /** Runs a round now, then one every `everyMs` until stop(). */
  start(): void {
    this.closed = false;
    this.tick();
    this.wake();
  }

  /** No more rounds; resolves when the current one has ended. */
  async stop(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Something may be waiting: runs a round now (or right after the current one). */
  wake(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.run()
      .catch((err: unknown) => this.o.logger.warn({ err }, `${this.o.what}: a round failed`))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async run(): Promise<void> {
    if (Date.now() - this.lastPrune >= this.o.pruneEveryMs) {
      this.lastPrune = Date.now();
      await this.o.prune();
    }
    await this.o.round();
  }

  private tick(): void {
    this.timer = setTimeout(() => {
      this.wake();
      if (!this.closed) this.tick();
    }, this.o.everyMs);
    this.timer.unref();
  }
}
