/**
 * The IdempotencyStore port (src/core/idempotency.ts) in SQL: the kept
 * outcomes of negotiate calls made with an Idempotency-Key.
 */
import { createHash } from 'node:crypto';
import { IDEMPOTENCY_TTL_SECONDS, IN_FLIGHT_TAKEOVER_SECONDS } from '../core/idempotency';
import type { ClaimResult, IdempotencyRef, IdempotencyStore, KeptOutcome } from '../core/ports';
import type { NegotiationResult } from '../core/negotiation';
import type { Transaction } from '../core/ports';
import { clientOf, prepared, type Queryable } from './sql';

// The TTL is src/core's IDEMPOTENCY_TTL_SECONDS, bound as each statement's last parameter.

/** A completed outcome within the TTL (a claim row is never committed without one). */
const FIND = `
  SELECT request_digest, status, body FROM idempotency_keys
  WHERE conversation_id = $1 AND principal = $2 AND key = $3
    AND status IS NOT NULL AND created_at > now() - make_interval(secs => $4)`;

/**
 * The claim, one statement: the key's advisory lock, taken without waiting
 * (a concurrent holder makes \`locked\` false and nothing is inserted), then
 * the claim row. Every claimer takes the lock first, so the INSERT never
 * waits on another's uncommitted row; its ON CONFLICT sees rows committed
 * after this statement's snapshot, so an outcome kept a moment ago is never
 * run again. An expired row (older than the TTL, not yet purged) is taken
 * over as a new claim; so is a committed claim without an outcome (a
 * participant's call whose process died) older than IN_FLIGHT_TAKEOVER_SECONDS.
 */
const CLAIM = `
  WITH l AS MATERIALIZED (SELECT pg_try_advisory_xact_lock($5::bigint) AS locked),
  claimed AS (
    INSERT INTO idempotency_keys (conversation_id, principal, key, request_digest)
    SELECT $1, $2, $3, $4 FROM l WHERE l.locked
    ON CONFLICT (conversation_id, principal, key) DO UPDATE
      SET request_digest = EXCLUDED.request_digest, status = NULL, body = NULL, created_at = now()
      WHERE idempotency_keys.created_at <= now() - make_interval(secs => $6)
         OR (idempotency_keys.status IS NULL AND idempotency_keys.created_at <= now() - make_interval(secs => $7))
    RETURNING 1
  )
  SELECT l.locked, EXISTS (SELECT 1 FROM claimed) AS claimed FROM l`;

const KEEP = `
  UPDATE idempotency_keys SET status = $4, body = $5::json
  WHERE conversation_id = $1 AND principal = $2 AND key = $3`;

const RELEASE = `
  DELETE FROM idempotency_keys
  WHERE conversation_id = $1 AND principal = $2 AND key = $3 AND status IS NULL`;

const PURGE = `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)`;

/** The advisory lock's key: 64 bits of a hash of the reference (a collision only makes a call 409). */
export function lockKey(ref: IdempotencyRef): string {
  const h = createHash('sha256')
    .update(JSON.stringify([ref.conversationId, ref.principal, ref.key]))
    .digest();
  return h.readBigInt64BE(0).toString();
}

export class SqlIdempotencyStore implements IdempotencyStore {
  constructor(private readonly pool: Queryable) {}

  async find(ref: IdempotencyRef): Promise<KeptOutcome | undefined> {
    const { rows } = await prepared<{ request_digest: string; status: number; body: NegotiationResult }>(
      this.pool,
      'idempotency_find',
      FIND,
      [ref.conversationId, ref.principal, ref.key, IDEMPOTENCY_TTL_SECONDS],
    );
    const row = rows[0];
    return row ? { requestDigest: row.request_digest, status: row.status, body: row.body } : undefined;
  }

  async claim(tx: Transaction, ref: IdempotencyRef, requestDigest: string): Promise<ClaimResult> {
    const { rows } = await prepared<{ locked: boolean; claimed: boolean }>(clientOf(tx), 'idempotency_claim', CLAIM, [
      ref.conversationId,
      ref.principal,
      ref.key,
      requestDigest,
      lockKey(ref),
      IDEMPOTENCY_TTL_SECONDS,
      IN_FLIGHT_TAKEOVER_SECONDS,
    ]);
    const row = rows[0]!;
    return !row.locked ? 'busy' : row.claimed ? 'claimed' : 'taken';
  }

  async release(ref: IdempotencyRef): Promise<void> {
    await prepared(this.pool, 'idempotency_release', RELEASE, [ref.conversationId, ref.principal, ref.key]);
  }

  async keep(tx: Transaction, ref: IdempotencyRef, status: number, body: NegotiationResult): Promise<void> {
    await prepared(clientOf(tx), 'idempotency_keep', KEEP, [
      ref.conversationId,
      ref.principal,
      ref.key,
      status,
      JSON.stringify(body),
    ]);
  }

  async purge(): Promise<number> {
    const { rowCount } = await prepared(this.pool, 'idempotency_purge', PURGE, [IDEMPOTENCY_TTL_SECONDS]);
    return rowCount ?? 0;
  }
}
