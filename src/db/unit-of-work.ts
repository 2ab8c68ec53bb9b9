/**
 * The UnitOfWork port on a `pg` pool: a transaction begun on the first
 * statement that needs it, so actions that write nothing cost no
 * BEGIN/COMMIT round trips.
 */
import type { Pool, PoolClient } from 'pg';
import type { Transaction, UnitOfWork, UnitsOfWork } from '../core/ports';
import { translateError } from './sql';

/**
 * Statements to send with a transaction's COMMIT, in the same simple query
 * (one round trip for both): the audit entry of a write action
 * (src/db/audit-store.ts). Keyed by the transaction's client.
 */
const withCommit = new WeakMap<PoolClient, string[]>();

/** Sends `sql` (parameterless, literals escaped) just before `tx` commits; dropped if it rolls back. */
export function sendWithCommit(tx: Transaction, sql: string): void {
  const c = tx as unknown as PoolClient;
  const list = withCommit.get(c);
  if (list) list.push(sql);
  else withCommit.set(c, [sql]);
}

export class LazyTransaction implements UnitOfWork {
  private pending: Promise<PoolClient> | undefined;
  /** Set once the action is over: a handler still running cannot start a new transaction. */
  private finished = false;
  /** Sent with BEGIN (openWith). */
  private opening: string[] = [];

  constructor(private readonly pool: Pool) {}

  transaction(): Promise<Transaction> {
    // The handle is the client itself: no wrapper per statement on the hot path.
    return this.client() as Promise<unknown> as Promise<Transaction>;
  }

  begun(): Promise<Transaction> | undefined {
    return this.pending as Promise<unknown> as Promise<Transaction> | undefined;
  }

  private client(): Promise<PoolClient> {
    if (this.finished) return Promise.reject(new Error('The action is over; its transaction is closed'));
    this.pending ??= (async () => {
      let c: PoolClient;
      try {
        c = await this.pool.connect();
      } catch (err) {
        throw translateError(err);
      }
      try {
        // One simple query: BEGIN and what must come before the writes (a write action's audit entry).
        await c.query(this.opening.length > 0 ? `BEGIN;\n${this.opening.join(';\n')}` : 'BEGIN');
      } catch (err) {
        c.release(err as Error);
        throw translateError(err);
      }
      return c;
    })();
    return this.pending;
  }

  openWith(statement: string): boolean {
    if (this.pending || this.finished) return false;
    this.opening.push(statement);
    return true;
  }

  async commit(): Promise<void> {
    this.finished = true;
    if (!this.pending) return;
    const c = await this.pending;
    this.pending = undefined;
    const before = withCommit.get(c);
    withCommit.delete(c);
    try {
      await c.query(before ? `${before.join(';\n')};\nCOMMIT` : 'COMMIT');
      c.release();
    } catch (err) {
      c.release(err as Error);
      throw translateError(err);
    }
  }

  async rollback(): Promise<void> {
    this.finished = true;
    if (!this.pending) return;
    const pending = this.pending;
    this.pending = undefined;
    let c: PoolClient;
    try {
      c = await pending;
    } catch {
      return; // BEGIN never happened.
    }
    withCommit.delete(c);
    try {
      await c.query('ROLLBACK');
      c.release();
    } catch (err) {
      // A broken connection is discarded rather than returned to the pool.
      c.release(err as Error);
    }
  }

  /**
   * After a timeout the handler may still hold the connection and send more:
   * the connection is destroyed rather than returned to the pool, which also
   * makes Postgres roll the transaction back.
   */
  async abandon(): Promise<void> {
    this.finished = true;
    const pending = this.pending;
    this.pending = undefined;
    if (!pending) return;
    try {
      const c = await pending;
      withCommit.delete(c);
      c.release(new Error('abandoned after the tool timed out'));
    } catch {
      // BEGIN never happened.
    }
  }
}

export class PoolUnitsOfWork implements UnitsOfWork {
  constructor(private readonly pool: Pool) {}

  start(): UnitOfWork {
    return new LazyTransaction(this.pool);
  }
}
