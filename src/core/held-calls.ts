/**
 * Held calls (API.md, "Held calls"): a negotiate (REST `Prefer: wait=N`, MCP
 * tools/call) refused with `permission_required` waits, up to N seconds, for
 * its approval request to be decided, instead of answering at once.
 *
 * Nothing polls per call: waiters are kept by approval id, and one listener
 * on the event feed (every event of the log, from every replica: approval
 * changes are notified across replicas) wakes them on `approval.decided` or
 * `approval.expired`. The listener is open only while something is held.
 * Once woken, the call is run again exactly as the agent's own retry with
 * that `approvalId` would be (the one path: a `once` approval becomes `used`,
 * a rejection answers `approval_rejected` with its reason, an expiry
 * `approval_expired`). Still pending when N passes, when the client goes
 * away, or at shutdown: the first refusal is the answer.
 */
import type { NegotiateRequest, NegotiationResult } from './negotiation';
import type { ApprovalStatus, LoggedEvent } from './ports';
import { type Principal, principalKey } from './principal';
import type { ToolLogger } from './tool-interface';

export interface HeldCallsDeps {
  /** Every event of the log from now on, in order (EventFeed.listen); resolves to the unsubscribe. */
  listen(listener: (e: LoggedEvent) => void): Promise<() => void>;
  /** The approval's status now (undefined: none): what was decided before the listener was open. */
  status(conversationId: string, approvalId: string): Promise<ApprovalStatus | undefined>;
  /** Calls one principal may have held at once (APPROVAL_MAX_HELD_PER_PRINCIPAL); beyond it a call answers at once. */
  maxPerPrincipal: number;
  logger: ToolLogger;
}

/** How long a call may be held, and what ends the hold early (the client went away). */
export interface HoldRequest {
  seconds: number;
  signal?: AbortSignal;
}

export interface HeldOutcome {
  result: NegotiationResult;
  /** True when the call was held (the transport then says `Preference-Applied: wait=N`). */
  held: boolean;
}

/** Why a hold ended: its approval left `pending`, or it did not (time, client gone, shutdown). */
type Wake = 'decided' | 'pending';

interface Waiter {
  wake(why: Wake): void;
}

const WAKING_EVENTS = new Set<string>(['approval.decided', 'approval.expired']);

export class HeldCalls {
  /** Waiters by approval id. */
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly perPrincipal = new Map<string, number>();
  private heldCount = 0;
  private subscription: Promise<() => void> | undefined;
  private closed = false;

  constructor(private readonly deps: HeldCallsDeps) {}

  /** Calls held now on this replica. */
  get size(): number {
    return this.heldCount;
  }

  /**
   * Runs `run(req)`; a refusal that recorded a pending approval is held (up
   * to `hold.seconds`) and, once the approval is decided, run again as its
   * retry with the approval's id.
   */
  async negotiate(
    call: { p: Principal; conversationId: string; req: NegotiateRequest },
    hold: HoldRequest,
    run: (req: NegotiateRequest) => Promise<NegotiationResult>,
  ): Promise<HeldOutcome> {
    const { p, conversationId, req } = call;
    const result = await run(req);
    const approvalId = holdable(req, result);
    if (approvalId === undefined || hold.seconds <= 0 || this.closed || hold.signal?.aborted) {
      return { result, held: false };
    }
    const key = principalKey(p);
    const count = this.perPrincipal.get(key) ?? 0;
    if (count >= this.deps.maxPerPrincipal) return { result, held: false };
    this.perPrincipal.set(key, count + 1);
    this.heldCount++;
    let why: Wake;
    try {
      why = await this.wait(conversationId, approvalId, hold);
    } finally {
      const left = (this.perPrincipal.get(key) ?? 1) - 1;
      if (left > 0) this.perPrincipal.set(key, left);
      else this.perPrincipal.delete(key);
      this.heldCount--;
    }
    if (why === 'pending') return { result, held: true };
    return { result: await run({ ...req, approvalId }), held: true };
  }

  /** Ends every hold at once (shutdown): each answers its first refusal. Later calls are not held. */
  releaseAll(): void {
    this.closed = true;
    for (const set of [...this.waiters.values()]) for (const w of [...set]) w.wake('pending');
  }

  /** Resolves when the approval leaves `pending`, or with 'pending' when the hold ends without that. */
  private wait(conversationId: string, approvalId: string, hold: HoldRequest): Promise<Wake> {
    return new Promise<Wake>((resolve) => {
      const onAbort = (): void => waiter.wake('pending');
      const waiter: Waiter = {
        wake: (why) => {
          if (!this.remove(approvalId, waiter)) return;
          clearTimeout(timer);
          hold.signal?.removeEventListener('abort', onAbort);
          resolve(why);
        },
      };
      const listening = this.add(approvalId, waiter);
      const timer = setTimeout(() => waiter.wake('pending'), hold.seconds * 1000);
      hold.signal?.addEventListener('abort', onAbort, { once: true });
      void this.recheck({ conversationId, approvalId, waiter, listening });
    });
  }

  /**
   * Once the listener is open, the approval is read once: a decision taken
   * before that (its event already past) wakes the waiter now. A listener
   * that cannot open (the database away) ends the hold: the refusal answers.
   */
  private async recheck(h: {
    conversationId: string;
    approvalId: string;
    waiter: Waiter;
    listening: Promise<unknown>;
  }): Promise<void> {
    const { conversationId, approvalId, waiter } = h;
    try {
      await h.listening;
      const status = await this.deps.status(conversationId, approvalId);
      if (status !== 'pending') waiter.wake('decided');
    } catch (err) {
      this.deps.logger.warn({ err, approvalId }, 'held calls: the approval could not be followed');
      waiter.wake('pending');
    }
  }

  /** Adds the waiter; resolves once the listener is open. */
  private add(approvalId: string, waiter: Waiter): Promise<unknown> {
    let set = this.waiters.get(approvalId);
    if (!set) this.waiters.set(approvalId, (set = new Set()));
    set.add(waiter);
    if (!this.subscription) {
      const sub = this.deps.listen((e) => this.onEvent(e));
      this.subscription = sub;
      // A failed listen is reported by recheck(); the next hold tries again.
      sub.catch(() => {
        if (this.subscription === sub) this.subscription = undefined;
      });
    }
    return this.subscription;
  }

  /** False when the waiter had already been woken. */
  private remove(approvalId: string, waiter: Waiter): boolean {
    const set = this.waiters.get(approvalId);
    if (!set?.delete(waiter)) return false;
    if (set.size === 0) this.waiters.delete(approvalId);
    if (this.waiters.size === 0 && this.subscription) {
      const sub = this.subscription;
      this.subscription = undefined;
      sub.then((unlisten) => unlisten()).catch(() => undefined);
    }
    return true;
  }

  private onEvent(e: LoggedEvent): void {
    if (!WAKING_EVENTS.has(e.type)) return;
    const id = (e.subject as { id?: unknown } | null)?.id;
    if (typeof id !== 'string') return;
    const set = this.waiters.get(id);
    if (set) for (const w of [...set]) w.wake('decided');
  }
}

/** The approval id a refusal waits on: a permission_required that recorded a pending request (never a dry run). */
function holdable(req: NegotiateRequest, result: NegotiationResult): string | undefined {
  if (req.dryRun || result.code !== 'permission_required') return undefined;
  return result.approval?.status === 'pending' ? result.approval.id : undefined;
}
