/**
 * The audit log (API.md, Audit): who did what, per conversation, as a hash
 * chain nobody can quietly edit.
 *
 * An entry is recorded in one of three ways, by what it is about:
 * - inside a transaction (`record(event, fields, tx)`): it commits with that
 *   transaction's writes, or not at all (a write action's entry);
 * - at once (`record(event, fields)`): committed before the call returns
 *   (permission changes, keys, conversations; one round trip, off the hot path);
 * - queued (`queue(event, fields)`): read-only decisions and refusals, written
 *   in batches within AUDIT_FLUSH_MS so the read path adds no round trip.
 * Either way it lands in a pending table first; one sealer at a time (any
 * replica) numbers pending entries in seal order and chains them: the
 * database's audit_seal function (migration 20260405000000), which computes
 * entryHash's JSON and hash; this module verifies with entryHash.
 */
import type { ConversationAccess } from './access';
import { argsDigest, sha256Hex } from './canonical-json';
import { AppError, RESERVED_CONVERSATION_ID, conversationNotFound } from './errors';
import type { NegotiateRequest, NegotiationResult } from './negotiation';
import type { AuditEntry, AuditEvent, AuditFields, AuditStore, PendingEntry, Transaction, UnitOfWork } from './ports';
import { type Principal, actorOf } from './principal';

export const GENESIS_HASH = '0'.repeat(64);

const str = JSON.stringify;

/**
 * hash = SHA-256 hex of prevHash + the canonical JSON of the entry without
 * `hash`. The entry's fields are known, so its canonical JSON is written
 * directly in sorted key order (absent fields left out), as canonicalJson
 * would write it (a unit test holds the two equal) but without sorting keys
 * for every entry verified (the database sealer writes the same JSON: migration 20260405000000).
 */
export function entryHash(e: Omit<AuditEntry, 'hash'> & { hash?: string }): string {
  let json = '{';
  if (e.action != null) json += `"action":${str(e.action)},`;
  json += `"actor":${str(e.actor)},`;
  if (e.approvalId != null) json += `"approvalId":${str(e.approvalId)},`;
  if (e.argsDigest != null) json += `"argsDigest":${str(e.argsDigest)},`;
  json += `"at":${str(e.at)},"conversationId":${str(e.conversationId)},"event":${str(e.event)},`;
  json += `"outcome":${str(e.outcome)},"prevHash":${str(e.prevHash)},"requestId":${str(e.requestId)},`;
  json += `"seq":${str(e.seq)}`;
  if (e.status != null) json += `,"status":${str(e.status)}`;
  if (e.tool != null) json += `,"tool":${str(e.tool)}`;
  return sha256Hex(e.prevHash + json + '}');
}

export type VerifyResult =
  { ok: true; entries: number; head: string } | { ok: false; entries: number; brokenAt: number };

/**
 * Checks one conversation's chain page by page: each entry's hash recomputes
 * and its prevHash is the previous entry's hash; the last one is the recorded
 * head. `brokenAt` is the seq of the first entry that fails (for entries
 * removed from the end, the head's seq).
 */
export class ChainVerifier {
  private prev = GENESIS_HASH;
  private count = 0;
  private broken: number | undefined;

  add(entries: AuditEntry[]): boolean {
    for (const e of entries) {
      if (this.broken !== undefined) return false;
      this.count++;
      if (e.prevHash !== this.prev || entryHash(e) !== e.hash) this.broken = e.seq;
      this.prev = e.hash;
    }
    return this.broken === undefined;
  }

  result(head: { seq: number; hash: string } | undefined): VerifyResult {
    if (this.broken === undefined && (head?.hash ?? GENESIS_HASH) !== this.prev) {
      this.broken = head?.seq ?? -1;
    }
    return this.broken === undefined
      ? { ok: true, entries: this.count, head: this.prev }
      : { ok: false, entries: this.count, brokenAt: this.broken };
  }
}

/** What negotiate's transport hands it to audit the call. */
export interface NegotiationAudit {
  /** The request's X-Request-Id. */
  requestId: string;
}

/** The REST status of a negotiation outcome (src/http/negotiate-status.ts, given at wiring). */
export type StatusOf = (result: NegotiationResult) => number;

export interface AuditPage {
  entries: AuditEntry[];
  /** Pass as `after` for the next page; null on the last page. */
  nextCursor: number | null;
}

const VERIFY_PAGE = 1000;

/**
 * The chain of events that belong to no conversation (admin and user keys'
 * creation and revocation). Only admins read it, whoever owns a conversation
 * of that id.
 */
export const SYSTEM_CHAIN = RESERVED_CONVERSATION_ID;

export class AuditService {
  constructor(
    private readonly store: AuditStore,
    private readonly access: ConversationAccess,
    private readonly statusOf: StatusOf,
    private readonly now: () => number = Date.now,
    /** The HTTP status of an error code the transport answers (problem+json), for the entry of a call that threw. */
    readonly errorStatusOf: (code: string) => number | undefined = () => undefined,
  ) {}

  /**
   * Appends an entry: with `tx`, it commits with that transaction (a unit of
   * work's, UnitOfWork.transaction()); without, it is committed before this
   * resolves, after what this replica had queued: so an entry queued before
   * (a read just answered, say) is never sealed after it (a conversation's
   * deletion, which is where its owner's view of the id's log ends).
   */
  async record(event: AuditEvent, fields: AuditFields, tx?: Transaction): Promise<void> {
    const entry: PendingEntry = { ...fields, event, at: this.now() };
    if (tx === undefined) {
      await this.store.flush();
      return this.store.insert(entry);
    }
    this.store.inTransaction(tx, entry);
  }

  /** A change `p` made (committed before this resolves): permission, key, conversation. */
  changed(
    p: Principal,
    event: AuditEvent,
    conversationId: string,
    requestId: string,
    extra: Partial<AuditFields> = {},
  ): Promise<void> {
    return this.record(event, { conversationId, actor: actorOf(p), requestId, outcome: 'success', ...extra });
  }

  /**
   * Writes what this replica queued so far: called before a change whose
   * entry goes with its transaction, so that an entry queued before it is
   * never sealed after it (as `record` without a transaction does).
   */
  flushQueued(): Promise<void> {
    return this.store.flush();
  }

  /** See AuditStore.ahead. */
  ahead(unit: UnitOfWork, event: AuditEvent, fields: AuditFields): boolean {
    return this.store.ahead(unit, { ...fields, event, at: this.now() });
  }

  /** Appends an entry in the next batch: for read-only decisions and refusals (see the crash guarantees in docs/AUDIT.md). */
  queue(event: AuditEvent, fields: AuditFields): void {
    this.store.enqueue({ ...fields, event, at: this.now() });
  }

  /** The trail of one negotiate call. */
  negotiation(p: Principal, conversationId: string, req: NegotiateRequest, meta: NegotiationAudit): NegotiationTrail {
    return new NegotiationTrail(this, this.statusOf, {
      conversationId,
      actor: actorOf(p),
      requestId: meta.requestId,
      argsDigest: argsDigest(req.args),
      ...(req.tool !== undefined ? { tool: printable(req.tool) } : {}),
      action: printable(req.action),
      ...(req.approvalId !== undefined ? { approvalId: printable(req.approvalId) } : {}),
      event: req.dryRun ? 'negotiate.dry_run' : 'negotiate',
    });
  }

  /** `GET /conversations/{id}/audit` (owner, admin): sealed entries, oldest first. */
  async list(p: Principal, conversationId: string, after: number, limit: number): Promise<AuditPage> {
    await this.checkAccess(p, conversationId, 'read the audit log');
    await this.store.flush();
    await this.store.seal();
    // An id may be deleted and created again, by someone else: a conversation's owner reads the
    // entries from its own creation on; only admins read those of the earlier conversations.
    if (p.role !== 'admin') after = Math.max(after, await this.store.lastDeletion(conversationId));
    const page = await this.store.page(conversationId, after, limit + 1);
    if (page.length === 0 && after === 0) await this.mustExist(conversationId);
    const more = page.length > limit;
    const entries = more ? page.slice(0, limit) : page;
    return { entries, nextCursor: more ? entries[entries.length - 1]!.seq : null };
  }

  /** `GET /conversations/{id}/audit/verify` (owner, admin). */
  async verify(p: Principal, conversationId: string): Promise<VerifyResult> {
    await this.checkAccess(p, conversationId, 'verify the audit log');
    await this.store.flush();
    await this.store.seal();
    const verifier = new ChainVerifier();
    // The whole chain is checked (the hashes link across the id's earlier conversations), but an
    // owner is told only of its own conversation's entries (as in list).
    const since = p.role === 'admin' ? 0 : await this.store.lastDeletion(conversationId);
    let visible = 0;
    let after = 0;
    for (;;) {
      const page = await this.store.page(conversationId, after, VERIFY_PAGE);
      visible += page.filter((e) => e.seq > since).length;
      if (!verifier.add(page) || page.length < VERIFY_PAGE) break;
      after = page[page.length - 1]!.seq;
    }
    const head = await this.store.head(conversationId);
    const result = verifier.result(head);
    if (result.entries === 0 && head === undefined) await this.mustExist(conversationId);
    return since === 0 ? result : { ...result, entries: result.ok ? visible : Math.min(visible, result.entries) };
  }

  /** Writes what is queued, seals, and stops the timers (shutdown). */
  close(): Promise<void> {
    return this.store.close();
  }

  /** As every other endpoint under the conversation (owner, admin; an agent 403 in its own, 404 elsewhere). */
  private async checkAccess(p: Principal, conversationId: string, what: string): Promise<void> {
    if (conversationId === SYSTEM_CHAIN && p.role !== 'admin') {
      throw conversationNotFound(conversationId);
    }
    await this.access.check(p, conversationId, 'manage', what);
  }

  /** An admin passes access checks without a read: a conversation with neither entries nor a row is not found. */
  private async mustExist(conversationId: string): Promise<void> {
    if (conversationId !== SYSTEM_CHAIN && (await this.access.ownerOf(conversationId)) === undefined) {
      throw conversationNotFound(conversationId);
    }
  }
}

/** Free text from the request (an action that routed nowhere) as a bounded, storable string. */
function printable(text: string): string {
  return text.slice(0, 128).replace(/[^\x20-\x7e]/g, '?');
}

type TrailBase = Omit<AuditFields, 'outcome'> & { event: AuditEvent };

/**
 * One negotiate call's entry: written with the action's transaction when it
 * wrote something (commit both or neither), else queued once the outcome is
 * known (read-only success, refusal, error; a write action rolled back is
 * recorded so, as its error, without its writes).
 */
export class NegotiationTrail {
  private recorded = false;
  /** The unit whose BEGIN carries this call's success entry (ahead()). */
  private aheadOf: UnitOfWork | undefined;

  constructor(
    private readonly audit: AuditService,
    private readonly statusOf: StatusOf,
    readonly base: TrailBase,
  ) {}

  get actor(): string {
    return this.base.actor;
  }

  get requestId(): string {
    return this.base.requestId;
  }

  private fields(result: NegotiationResult): AuditFields {
    const { event: _event, ...base } = this.base;
    return {
      ...base,
      ...(result.routing ? { tool: result.routing.tool, action: result.routing.action } : {}),
      outcome: result.success ? 'success' : (result.code ?? 'error'),
      status: this.statusOf(result),
      ...(result.approval ? { approvalId: result.approval.id } : {}),
    };
  }

  /**
   * Before a write action runs in `unit`: its entry, as it will read if the
   * action succeeds, is sent with the unit's BEGIN. It then commits with the
   * writes (the unit commits only on success) or rolls back with them (the
   * failure is recorded instead, rolledBack()), and it is not written while
   * the writes hold their rows locked: the window in which concurrent writers
   * of one row wait on each other is the same as without an audit.
   */
  ahead(unit: UnitOfWork, decided: Pick<NegotiationResult, 'routing'>): void {
    const success: NegotiationResult = { success: true, output: null, ...decided };
    if (this.audit.ahead(unit, this.base.event, this.fields(success))) this.aheadOf = unit;
  }

  /** Before the unit commits: when it has a transaction open, the entry goes with its COMMIT. */
  async inUnit(unit: UnitOfWork, result: NegotiationResult): Promise<void> {
    const tx = unit.begun();
    if (tx === undefined) return;
    if (this.aheadOf === unit) {
      // Sent with its BEGIN (ahead()): it commits with the unit.
      this.recorded = true;
      return;
    }
    await this.audit.record(this.base.event, this.fields(result), await tx);
    this.recorded = true;
  }

  /**
   * The outcome, committed before this resolves: a participant's write-level
   * call, which wrote nothing here to carry its entry, but changed something
   * upstream (a queued entry may be lost in a crash).
   */
  async now(result: NegotiationResult): Promise<void> {
    if (this.recorded) return;
    await this.audit.record(this.base.event, this.fields(result));
    this.recorded = true;
  }

  /** The unit rolled back after inUnit: its entry went with it. */
  rolledBack(): void {
    this.recorded = false;
  }

  /** The call's outcome, unless its entry went with its transaction. */
  done(result: NegotiationResult): void {
    if (this.recorded) return;
    this.recorded = true;
    const fields = this.fields(result);
    this.audit.queue(this.base.event, fields);
    // A refusal that recorded (or reused) an approval request: that request is an event of its own.
    if (result.approval) this.audit.queue('approval.requested', { ...fields, outcome: 'pending' });
  }

  /** The call ended in an error the transport answers (503, 403 forbidden): recorded with its code. */
  failed(err: unknown): void {
    if (this.recorded) return;
    const code = err instanceof AppError || (err instanceof Error && 'code' in err) ? String(err.code) : 'internal';
    // A conversation the caller may not see (or that does not exist) gets no entry: nothing was decided in it.
    if (code === 'not_found') return;
    // Another request with the same Idempotency-Key committed first: this one is answered from that
    // one's kept outcome (a replay), which decided nothing new.
    if (err instanceof Error && err.name === 'AlreadyKept') return;
    this.recorded = true;
    const { event, ...base } = this.base;
    this.audit.queue(event, {
      ...base,
      outcome: code,
      status: this.audit.errorStatusOf(code) ?? 500,
    });
  }
}
