/**
 * Idempotent negotiate (API.md, Idempotency): a call made with an
 * Idempotency-Key runs at most once per conversation, principal and key; its
 * outcome is kept, in the action's own transaction, and a repeat with the
 * same body is answered from it without running anything.
 *
 * How it holds under concurrency (every replica, one database):
 * 1. A kept outcome is looked up first, without a transaction: a replay (or
 *    a 422 for another body) costs that one statement.
 * 2. Otherwise the call is decided as usual. If the action runs, its unit of
 *    work begins before the handler and claims the key (IdempotencyStore.claim):
 *    a transaction-scoped advisory lock taken without waiting, then the
 *    claim row inserted. A concurrent call holding the key is answered 409
 *    `conflict` at once (it never waits holding a pool connection); a call
 *    that finds a row committed meanwhile replays it.
 * 3. The outcome is written into the claim row, and the transaction commits
 *    with the action's writes: both or neither. A failed action rolls back
 *    its claim with its writes, so the key is free again.
 *
 * Kept: the outcome of an action that ran and committed (200). Not kept:
 * refusals decided before anything ran (routing, policy, permission, ceiling,
 * args, dry runs) and the special actions (list-tools, upgrade:), which run
 * no tool; a tool's failure (4xx codes from the tool, 500 tool_error) whose
 * writes were rolled back; database trouble (503). A retry of those with the
 * same key is decided and run afresh.
 *
 * A participant's action (a remote tool) holds no transaction while its
 * upstream runs: the key is claimed by a statement of its own, committed
 * before the upstream is called (claimAhead: a concurrent call then finds the
 * claim row, still without an outcome, and is answered 409), and the outcome
 * is written into that row with the call's audit entry afterwards. What the
 * upstream answered is final, failure included (its effects cannot be rolled
 * back, so a retry must not call it again); only participant_unavailable (the
 * upstream was never reached) gives the key back (release), so a retry once
 * the upstream is back runs. A claim row left by a process that died
 * mid-call is taken over after IN_FLIGHT_TAKEOVER_SECONDS.
 */
import type { NegotiationAudit } from './audit';
import { canonicalJson, sha256Hex } from './canonical-json';
import { AppError, conversationNotFound } from './errors';
import type { NegotiateRequest, NegotiationResult } from './negotiation';
import type { IdempotencyRef, IdempotencyStore, KeptOutcome, UnitOfWork, UnitsOfWork } from './ports';
import { type Principal, principalKey } from './principal';

/** How long an outcome is kept (and a key stays taken): the one truth; src/db/idempotency-store.ts binds it in its SQL. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/**
 * A claim row committed without an outcome (a participant's call in flight)
 * older than this is taken over by the next claim: its process died mid-call.
 * Far above any call's timeout (TOOL_TIMEOUT_MS, a participant's timeoutMs).
 */
export const IN_FLIGHT_TAKEOVER_SECONDS = 15 * 60;

/** 1 to 255 visible ASCII characters (API.md). */
export const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/;

/** What runAction needs for a call with a key: its unit of work, claimed, and the outcome kept in it. */
export interface OutcomeKeeper {
  /** A unit of work whose transaction has begun and holds the key; throws when it cannot. */
  open(): Promise<UnitOfWork>;
  /** Stores the outcome in the unit's transaction (before its commit). */
  keep(unit: UnitOfWork, result: NegotiationResult): Promise<void>;
  /**
   * A participant's call: the key claimed by a statement of its own, committed
   * before the upstream is called (no transaction held across it); throws as
   * open() does. Its outcome is then kept with keep() in a unit of its own.
   */
  claimAhead(): Promise<void>;
  /** Gives a key claimAhead took back: the call never reached its upstream. */
  release(): Promise<void>;
}

/** What negotiate with a key answers. */
export interface IdempotentOutcome {
  status: number;
  body: NegotiationResult;
  /** true when answered from a kept outcome. */
  replayed: boolean;
}

/** SHA-256 (hex) of the request body's canonical JSON. */
export function requestDigest(req: NegotiateRequest): string {
  return sha256Hex(canonicalJson(req));
}

/** The key ran (or is running) elsewhere: answered from the kept outcome instead. */
class AlreadyKept extends Error {
  constructor() {
    super('An outcome was kept for this idempotency key while this call was deciding');
    this.name = 'AlreadyKept';
  }
}

function busy(): AppError {
  return new AppError(
    'conflict',
    'A request with this Idempotency-Key is still running; retry later to get its outcome',
  );
}

export interface IdempotencyDeps {
  store: IdempotencyStore;
  units: UnitsOfWork;
  /** negotiate itself, with the keeper its action's unit of work uses. */
  negotiate(
    p: Principal,
    conversationId: string,
    req: NegotiateRequest,
    keeper: OutcomeKeeper,
    meta?: NegotiationAudit,
  ): Promise<NegotiationResult>;
  /** The transport's status for an outcome (kept with it). */
  statusOf(result: NegotiationResult): number;
}

/** How often each replica deletes expired outcomes: one indexed DELETE, cheap when there is little to do. */
export const PURGE_INTERVAL_MS = 5 * 60 * 1000;

export class IdempotentNegotiation {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: IdempotencyDeps) {}

  /** Deletes the outcomes older than IDEMPOTENCY_TTL_SECONDS (lookups ignore them already); how many. */
  purge(): Promise<number> {
    return this.deps.store.purge();
  }

  /**
   * Purges now and every `intervalMs` on this replica. Every replica runs it;
   * concurrent DELETEs of the same rows are harmless.
   */
  startPurge(onError: (err: unknown) => void, intervalMs = PURGE_INTERVAL_MS): void {
    if (this.timer) return;
    const run = (): void => void this.purge().catch(onError);
    run();
    this.timer = setInterval(run, intervalMs);
    this.timer.unref();
  }

  stopPurge(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  async negotiate(
    p: Principal,
    conversationId: string,
    req: NegotiateRequest,
    key: string,
    /**
     * What the audit entry records of the request (its id); `sentAs`: the body
     * the client sent, when `req` is the run of a held call once its approval
     * was decided (src/core/held-calls.ts): the key's outcome is kept for that
     * body, which a repeat of the client's request carries.
     */
    meta?: NegotiationAudit & { sentAs?: NegotiateRequest },
  ): Promise<IdempotentOutcome> {
    // An agent's key names its one conversation: refused before any statement, as without a key.
    if (p.role === 'agent' && p.conversationId !== conversationId) {
      throw conversationNotFound(conversationId);
    }
    const ref: IdempotencyRef = { conversationId, principal: principalKey(p), key };
    const digest = requestDigest(meta?.sentAs ?? req);
    const kept = await this.deps.store.find(ref);
    if (kept) return this.replay(kept, digest);
    const { store, units } = this.deps;
    const statusOf = (r: NegotiationResult): number => this.deps.statusOf(r);
    const keeper: OutcomeKeeper = {
      open: async () => {
        const unit = units.start();
        try {
          const claim = await store.claim(await unit.transaction(), ref, digest);
          if (claim === 'claimed') return unit;
          throw claim === 'busy' ? busy() : new AlreadyKept();
        } catch (err) {
          await unit.rollback();
          throw err;
        }
      },
      keep: async (unit, result) => store.keep(await unit.transaction(), ref, statusOf(result), result),
      claimAhead: async () => {
        const unit = units.startSingle();
        try {
          const claim = await store.claim(await unit.transaction(), ref, digest);
          if (claim !== 'claimed') throw claim === 'busy' ? busy() : new AlreadyKept();
        } finally {
          await unit.commit();
        }
      },
      release: () => store.release(ref),
    };
    try {
      const result = await this.deps.negotiate(p, conversationId, req, keeper, meta && { requestId: meta.requestId });
      return { status: statusOf(result), body: result, replayed: false };
    } catch (err) {
      if (!(err instanceof AlreadyKept)) throw err;
      const now = await store.find(ref);
      // Committed a moment ago, so it is there; if it was purged in between, the caller may retry.
      if (!now) throw busy();
      return this.replay(now, digest);
    }
  }

  private replay(kept: KeptOutcome, digest: string): IdempotentOutcome {
    if (kept.requestDigest !== digest) {
      throw new AppError(
        'idempotency_key_reused',
        'This Idempotency-Key was used with another request body; use a new key for a new request',
      );
    }
    return { status: kept.status, body: kept.body, replayed: true };
  }
}
