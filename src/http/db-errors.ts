/**
 * Database errors that are the client's fault or a lost race, not the
 * service's: recognised by SQLSTATE (or Prisma's code for the same), never
 * by message text, which changes with the server's version and locale.
 */
import { AppError } from './problem';

/** The codes along an error's cause chain: pg's `code`, the Prisma adapter's `originalCode`, Prisma's own `code`. */
function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 8) {
    const e = queue.shift();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const rec = e as {
      code?: unknown;
      originalCode?: unknown;
      cause?: unknown;
      meta?: { driverAdapterError?: unknown };
    };
    for (const c of [rec.code, rec.originalCode]) if (typeof c === 'string') codes.push(c);
    queue.push(rec.cause, rec.meta?.driverAdapterError);
  }
  return codes;
}

/** The client's error for a database error that is one, or undefined. */
export function clientErrorOf(err: unknown): AppError | undefined {
  for (const code of codesOf(err)) {
    switch (code) {
      case '22P05': // untranslatable character (a NUL in text or jsonb)
      case '22021': // invalid byte sequence for the encoding
        return new AppError('validation_failed', 'The request holds characters the database cannot store');
      case '23503': // foreign key violation: the conversation was deleted while this request ran
      case 'P2003':
        return new AppError('not_found', 'The conversation was deleted while this request ran');
    }
  }
  return undefined;
}
