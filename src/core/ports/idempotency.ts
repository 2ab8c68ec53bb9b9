/** The port of kept negotiate outcomes (src/core/idempotency.ts uses it; src/db/idempotency-store.ts implements it). */
import type { NegotiationResult } from '../negotiation';
import type { Transaction } from './units';

/** Which call a key belongs to. */
export interface IdempotencyRef {
  conversationId: string;
  /** principalKey(p): an API key by id, a JWT's caller by role and subject. */
  principal: string;
  key: string;
}

export interface KeptOutcome {
  requestDigest: string;
  status: number;
  body: NegotiationResult;
}

export type ClaimResult = 'claimed' | 'busy' | 'taken';

/** Storage of kept outcomes (src/db/idempotency-store.ts). */
export interface IdempotencyStore {
  /** The completed outcome kept for this key within the TTL, if any (no transaction). */
  find(ref: IdempotencyRef): Promise<KeptOutcome | undefined>;
  /**
   * In `tx`: 'claimed' (the key is this transaction's until it ends), 'busy'
   * (another transaction holds it now) or 'taken' (an outcome was committed,
   * or a claim row without one: a participant's call in flight, unless it is
   * older than IN_FLIGHT_TAKEOVER_SECONDS). Never waits for another transaction.
   */
  claim(tx: Transaction, ref: IdempotencyRef, requestDigest: string): Promise<ClaimResult>;
  /** Deletes the claim row that has no outcome yet (a participant's call that never reached its upstream). */
  release(ref: IdempotencyRef): Promise<void>;
  /** Writes the outcome into the claim row of `tx`. */
  keep(tx: Transaction, ref: IdempotencyRef, status: number, body: NegotiationResult): Promise<void>;
  /** Deletes outcomes older than the TTL; how many. */
  purge(): Promise<number>;
}
