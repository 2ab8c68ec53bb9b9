/**
 * The UnitOfWork port on a `pg` pool: a transaction begun on the first
 * statement that needs it, so actions that write nothing cost no
 * BEGIN/COMMIT round trips.
 */
import { Client, type ClientConfig, type Pool, type PoolClient } from 'pg';
import type { Transaction, UnitOfWork, UnitsOfWork } from '../core/ports';
import { type Queryable, translateError } from './sql';

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

/**
 * A row (an audit entry) a single-statement unit inserts with its write:
 * `values[i]` of Postgres type `types[i]` into `columns[i]` of `table`.
 */
export interface CompanionRow {
  table: string;
  columns: readonly string[];
  types: readonly string[];
  values: readonly unknown[];
}

/**
 * Until `unit` begins: `statement` (parameterless) is sent with its BEGIN, in
 * the same round trip, before any of its writes, and commits or rolls back
 * with them; a single-statement unit inserts `row` with its one write
 * instead. False once begun (nothing sent). The SQL stays in src/db: the
 * domain's UnitOfWork port knows no statements, so this takes the units
 * src/db made (any other is a wiring error).
 */
export function openWith(unit: UnitOfWork, statement: string, row: CompanionRow): boolean {
  if (unit instanceof LazyTransaction) return unit.openWith(statement);
  if (unit instanceof SingleStatement) return unit.openWith(row);
  throw new Error('openWith takes a unit of work made by src/db (PoolUnitsOfWork)');
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

  /** See the function openWith. */
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

type QueryConfig = { name?: string; text: string; values?: unknown[] };

/**
 * `statement` (a write with RETURNING) as one statement that also inserts
 * `row` when the write returns a row: `WITH w AS (write), c AS (INSERT …
 * SELECT … FROM w LIMIT 1) SELECT * FROM w`. It returns what the write
 * returns. The row's values follow the write's as parameters, so a named
 * write stays a prepared statement (under a name of its own).
 */
export function withCompanion(statement: QueryConfig, row: CompanionRow): QueryConfig {
  const values = statement.values ?? [];
  const params = row.types.map((type, i) => `$${values.length + i + 1}::${type}`).join(', ');
  return {
    ...(statement.name !== undefined ? { name: `${statement.name}+${row.table}` } : {}),
    text:
      `WITH w AS (${statement.text}), ` +
      `c AS (INSERT INTO ${row.table} (${row.columns.join(', ')}) SELECT ${params} FROM w LIMIT 1) ` +
      'SELECT * FROM w',
    values: [...values, ...row.values],
  };
}

/**
 * UnitsOfWork.startSingle: the action's one write, autocommitted, carrying
 * the call's audit entry (openWith's row) in the same statement. The handle
 * it gives out is itself: the resource store's statements run through it.
 */
export class SingleStatement implements UnitOfWork, Queryable {
  private row: CompanionRow | undefined;
  /** The one statement, once sent. */
  private sent: Promise<unknown> | undefined;
  /** Its connection while it runs (for abandon's cancel). */
  private running: PoolClient | undefined;
  /** Set when the statement inserted the row: begun() is then this handle. */
  private rowWritten = false;
  private finished = false;

  constructor(private readonly pool: Pool) {}

  transaction(): Promise<Transaction> {
    if (this.finished) return Promise.reject(new Error('The action is over; its statement is done'));
    return Promise.resolve(this as unknown as Transaction);
  }

  begun(): Promise<Transaction> | undefined {
    return this.rowWritten ? Promise.resolve(this as unknown as Transaction) : undefined;
  }

  /** See the function openWith. */
  openWith(row: CompanionRow): boolean {
    if (this.sent || this.finished) return false;
    this.row = row;
    return true;
  }

  query<R extends object = Record<string, unknown>>(
    query: string | QueryConfig,
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }> {
    if (this.finished) return Promise.reject(new Error('The action is over; its statement is done'));
    if (this.sent) {
      return Promise.reject(
        new Error('An action declared singleWrite sent a second statement; its first has committed'),
      );
    }
    const config: QueryConfig = typeof query === 'string' ? { text: query, values } : query;
    const run = this.run<R>(this.row ? withCompanion(config, this.row) : config);
    this.sent = run.catch(() => undefined);
    return run;
  }

  private async run<R extends object>(config: QueryConfig): Promise<{ rows: R[]; rowCount: number | null }> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translateError(err);
    }
    if (this.finished) {
      // Abandoned (timed out) while waiting for a connection: the write is not sent at all.
      client.release();
      throw new Error('The action is over; its statement was not sent');
    }
    this.running = client;
    try {
      const result = await client.query<R>(config);
      if (this.row && result.rows.length > 0) this.rowWritten = true;
      // Abandoned while it ran: a cancel may be on its way to this backend, so the connection is
      // not handed to another request (whose statement the cancel would hit); it is closed.
      client.release(this.finished ? new Error('abandoned after the tool timed out') : undefined);
      return result;
    } catch (err) {
      client.release(err as Error);
      throw err;
    } finally {
      this.running = undefined;
    }
  }

  commit(): Promise<void> {
    this.finished = true;
    return Promise.resolve();
  }

  /** Nothing to roll back: the statement committed or failed on its own. */
  rollback(): Promise<void> {
    this.finished = true;
    return Promise.resolve();
  }

  /**
   * A statement still running (waiting on a row lock, say) is cancelled;
   * resolves once it has ended. One still waiting for a connection is never
   * sent (run() sees `finished`): nothing to wait for.
   */
  async abandon(): Promise<void> {
    this.finished = true;
    if (!this.running) return;
    // The backend's process id (pg's Client has it from the server's BackendKeyData).
    const pid = (this.running as { processID?: unknown } | undefined)?.processID;
    if (typeof pid === 'number') await cancelBackend(this.pool, pid);
    await this.sent;
  }
}

/**
 * Cancels the statement running on backend `pid`, over a connection of its
 * own: the pool's may all be taken (by statements waiting on the very lock).
 * The embedded database (one session, served in-process: the `stream`
 * option) has no other session to wait on and no cancel to send.
 */
async function cancelBackend(pool: Pool, pid: number): Promise<void> {
  const options = (pool as unknown as { options: ClientConfig }).options;
  if (typeof options.stream === 'function') return;
  const client = new Client({ ...options, connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT pg_cancel_backend($1)', [pid]);
  } catch {
    // Unreachable database: the statement ends with its connection (or commits: the caller sees which).
  } finally {
    await client.end().catch(() => undefined);
  }
}

export class PoolUnitsOfWork implements UnitsOfWork {
  constructor(private readonly pool: Pool) {}

  start(): UnitOfWork {
    return new LazyTransaction(this.pool);
  }

  startSingle(): UnitOfWork {
    return new SingleStatement(this.pool);
  }
}
