/**
 * How the SQL adapters talk to `pg`: a pool or a transaction's client, named
 * (prepared) statements, and the one translation of driver (and Prisma)
 * errors into the domain's (src/core/errors.ts), so every transport and the
 * negotiate path see the same errors.
 */
import { AppError, reservedIdError, TransactionAbortedError, UnavailableError } from '../core/errors';
import type { Transaction } from '../core/ports';
import { Pool, type PoolClient, Query } from 'pg';
import { driverErrorChain, isDatabaseUnavailable } from './database';

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

/** The codes along an error's cause chain: pg's `code`, the Prisma adapter's `originalCode`, Prisma's own `code`. */
function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  for (const e of driverErrorChain(err)) {
    const rec = e as { code?: unknown; originalCode?: unknown; constraint?: unknown };
    for (const c of [rec.code, rec.originalCode]) if (typeof c === 'string') codes.push(c);
    // A check violation is told apart by its constraint's name (pg's `constraint`; Prisma's adapter drops it,
    // so the Prisma path checks the id itself: src/core/conversations.ts).
    if (rec.constraint === RESERVED_ID_CONSTRAINT) codes.push(RESERVED_ID_CONSTRAINT);
  }
  return codes;
}

/** The CHECK that keeps conversations off the audit log's reserved chain id (migration 20260404000000). */
const RESERVED_ID_CONSTRAINT = 'conversations_id_not_reserved';

/** The domain's error for one SQLSTATE (or Prisma code), or undefined. Codes, never message text. */
function domainErrorOf(code: string, err: unknown): Error | undefined {
  switch (code) {
    case '40P01': // deadlock detected: the whole unit of work may run again
    case '40001': // serialization failure: likewise
      return new TransactionAbortedError(err);
    case '22P05': // untranslatable character (a NUL in text or jsonb)
    case '22021': // invalid byte sequence for the encoding
      return new AppError('validation_failed', 'The request holds characters the database cannot store', undefined, {
        cause: err,
      });
    case RESERVED_ID_CONSTRAINT:
      return reservedIdError({ cause: err });
    case '23503': // foreign key violation: the conversation was deleted while this request ran
    case 'P2003':
      return new AppError('not_found', 'The conversation was deleted while this request ran', undefined, {
        cause: err,
      });
  }
  return undefined;
}

/** The domain's error for a driver or Prisma error that is one of its conditions; else the error itself. */
export function translateError(err: unknown): unknown {
  if (isDatabaseUnavailable(err)) return new UnavailableError(err);
  for (const code of codesOf(err)) {
    const translated = domainErrorOf(code, err);
    if (translated) return translated;
  }
  return err;
}

/** A promise's rejection rethrown as the domain's error (no extra async frame on the hot path). */
export function translated<T>(statement: PromiseLike<T>): Promise<T> {
  return Promise.resolve(statement).then(undefined, rethrowTranslated);
}

function rethrowTranslated(err: unknown): never {
  throw translateError(err);
}

/**
 * A named (prepared) statement: Postgres parses and plans it once per
 * connection instead of on every call, which matters on the negotiate path.
 */
export function prepared<R extends object>(
  db: Queryable,
  name: string,
  text: string,
  values: unknown[],
): Promise<{ rows: R[]; rowCount: number | null }> {
  if (db instanceof Pool) {
    // On the pool (the negotiate path's decision read), a Query built from text and values and then
    // named: pg copies a plain config object property by property, descriptors and all (~3 µs a
    // statement measured here), a Query it takes as it is.
    const query = new Query(text, values);
    (query as { name?: string }).name = name;
    return (db.query(query) as unknown as Promise<{ rows: R[]; rowCount: number | null }>).then(
      undefined,
      rethrowTranslated,
    );
  }
  return db.query<R>({ name, text, values }).then(undefined, rethrowTranslated);
}

/**
 * `work` in a transaction of its own on a client of `pool`: committed when it
 * resolves, rolled back when it throws (the outboxes' fan-out and claims). A
 * client whose ROLLBACK fails is released as broken, so the pool drops it.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await translated(pool.connect());
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((e: Error) => (broken = e));
    throw err;
  } finally {
    client.release(broken);
  }
}
