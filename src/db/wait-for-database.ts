/**
 * Start-up against a database that may not be up yet (a container started
 * before Postgres, a failover in progress): try, and while the database is
 * unreachable, wait with a capped doubling backoff and say so in the log.
 * Any other error (a bad password, a broken migration) is not retried.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger';
import { isDatabaseUnavailable } from './database';

export interface WaitOptions {
  /** One attempt: resolves when the database answers and is ready for use. */
  attempt: () => Promise<void>;
  logger: Logger;
  /** Aborting (SIGTERM) ends the wait: the promise rejects with an AbortError. */
  signal: AbortSignal;
  firstDelayMs?: number;
  maxDelayMs?: number;
}

export async function waitForDatabase(opts: WaitOptions): Promise<void> {
  const max = opts.maxDelayMs ?? 10_000;
  let delay = opts.firstDelayMs ?? 500;
  for (let attempt = 1; ; attempt++) {
    opts.signal.throwIfAborted();
    try {
      await opts.attempt();
      return;
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      // The code (ECONNREFUSED, 57P03…) is what an operator needs; the stack is noise here.
      const code = (err as { code?: unknown }).code;
      opts.logger.warn(
        { attempt, retryInMs: delay, code },
        `Database not reachable (attempt ${attempt}); retrying in ${delay / 1000} s`,
      );
    }
    await sleep(delay, undefined, { signal: opts.signal });
    delay = Math.min(delay * 2, max);
  }
}
