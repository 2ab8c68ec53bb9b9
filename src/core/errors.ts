/**
 * The domain's errors: one type with a machine-readable code, which every
 * transport maps to its own answer (src/http/problem.ts to problem+json), and
 * the two database conditions the domain must tell apart from a tool's
 * failure. The adapters in src/db raise those two, and an AppError for a
 * database error that is the client's (or a lost race's); the domain never
 * looks at driver codes.
 */

/** A machine-readable error code (problem+json's `code`). */
export type ErrorCode =
  | 'validation_failed'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'precondition_failed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'rate_limited'
  | 'internal'
  | 'unavailable'
  /** A query filter that ran past QUERY_TIMEOUT_MS (API.md, "Shared context, M6"). */
  | 'query_too_expensive';

export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    public readonly code: ErrorCode,
    message: string,
    public readonly errors?: FieldError[],
    /** The cause, for the log only (a database error the adapters translated, say). */
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'AppError';
  }
}

/**
 * Something the service depends on cannot be reached right now (the database;
 * the identity provider's keys, src/auth/jwt.ts): the service's trouble, never
 * a tool's or the caller's (REST answers 503).
 */
export class UnavailableError extends Error {
  readonly code = 'unavailable';
  constructor(cause: unknown, message = 'The database is unavailable') {
    super(message, { cause });
    this.name = 'UnavailableError';
  }
}

/**
 * The database aborted the transaction to break a deadlock or a
 * serialization conflict: nothing of it committed, so the whole unit of work
 * may run again.
 */
export class TransactionAbortedError extends Error {
  readonly code = 'transaction_aborted';
  constructor(cause: unknown) {
    super('The transaction was aborted by a deadlock or serialization failure', { cause });
    this.name = 'TransactionAbortedError';
  }
}

/** "Conversation not found": the one constructor of that 404, for a missing conversation and for one the caller may not see. */
export function conversationNotFound(id: string): AppError {
  return new AppError('not_found', `Conversation not found: ${id}`);
}

/** How far down a cause chain is looked: deep enough for a tool's wrapping, bounded for a cyclic chain. */
const MAX_CAUSE_DEPTH = 8;

/**
 * The first error along `err`'s cause chain (err itself first) that `matches`:
 * a tool may wrap the error its shared context threw in one of its own. The
 * one walk of an error's causes; every caller goes through it.
 */
export function findCause<T extends Error>(err: unknown, matches: (e: Error) => e is T): T | undefined;
export function findCause(err: unknown, matches: (e: Error) => boolean): Error | undefined;
export function findCause(err: unknown, matches: (e: Error) => boolean): Error | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < MAX_CAUSE_DEPTH; e = e.cause, depth++) {
    if (matches(e)) return e;
  }
  return undefined;
}

/** The UnavailableError along the cause chain, if the database (or another dependency) was unavailable. */
export function unavailableCause(err: unknown): UnavailableError | undefined {
  return findCause(err, (e): e is UnavailableError => e instanceof UnavailableError);
}

/** Whether the database was unavailable somewhere along the cause chain. */
export function isUnavailable(err: unknown): boolean {
  return unavailableCause(err) !== undefined;
}

/**
 * The conversation id the audit log keeps admin and user keys' events under
 * (src/core/audit.ts): no conversation may take it, or its owner would read
 * them. The database refuses it too (CHECK conversations_id_not_reserved).
 */
export const RESERVED_CONVERSATION_ID = '_system';

export function reservedIdError(options?: ErrorOptions): AppError {
  return new AppError(
    'validation_failed',
    `The conversation id "${RESERVED_CONVERSATION_ID}" is reserved (the audit log of admin and user keys)`,
    [{ path: 'conversationId', message: `must not be "${RESERVED_CONVERSATION_ID}"` }],
    options,
  );
}
