/**
 * How the SQL adapters talk to `pg`: a pool or a transaction's client, named
 * (prepared) statements, and the translation of the driver's errors into the
 * two the domain tells apart (src/core/errors.ts).
 */
import { TransactionAbortedError, UnavailableError } from '../core/errors';
import type { Transaction } from '../core/ports';
import { isDatabaseUnavailable } from './database';

/** A pool or a client inside a transaction. */
export interface Queryable {
  query<R extends object = Record<string, unknown>>(
    query: string | { name?: string; text: string; values?: unknown[] },
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
}

/** The client behind a unit of work's transaction handle (only src/db/unit-of-work.ts makes them). */
export function clientOf(tx: Transaction): Queryable {
  return tx as unknown as Queryable;
}

/** Deadlock detected, serialization failure: the whole unit of work may run again. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);

/** The domain's error for a driver error that is one of its two conditions; else the error itself. */
export function translateError(err: unknown): unknown {
  if (isDatabaseUnavailable(err)) return new UnavailableError(err);
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && RETRYABLE_SQLSTATES.has(code)) return new TransactionAbortedError(err);
  return err;
}

/**
 * A named (prepared) statement: Postgres parses and plans it once per
 * connection instead of on every call, which matters on the negotiate path.
 */
export async function prepared<R extends object>(
  db: Queryable,
  name: string,
  text: string,
  values: unknown[],
): Promise<{ rows: R[]; rowCount: number | null }> {
  try {
    return await db.query<R>({ name, text, values });
  } catch (err) {
    throw translateError(err);
  }
}
