/**
 * The AuditStore port (src/core/audit.ts) in SQL: the pending table, the
 * batch writer for queued entries, the sealer that chains them into
 * `audit_log`, and the reads.
 *
 * Crash guarantees (docs/AUDIT.md):
 * - an entry given a transaction is sent with its COMMIT: both or neither;
 * - an entry inserted at once is committed before the call returns;
 * - a queued entry is written within `flushMs` (or sooner, `flushMax`
 *   entries at a time) with asynchronous commit: one acknowledged to the
 *   client may be lost if the process (or Postgres) dies in that window;
 * - sealing moves committed pending entries in one transaction, so an entry
 *   is pending or sealed, never lost or doubled.
 */
import { escapeLiteral, type Pool } from 'pg';
import type { AuditEntry, AuditStore, PendingEntry } from '../core/ports';
import type { Transaction, UnitOfWork } from '../core/ports';
import type { Logger } from '../logger';
import { prepared, translated } from './sql';
import { type CompanionRow, openWith, sendWithCommit } from './unit-of-work';

/** One sealer at a time, across replicas (a transaction-scoped advisory lock). */
const SEAL_LOCK = 0x61756474; // 'audt'
/** Pending entries moved per sealing transaction. */
const SEAL_BATCH = 2000;

const COLUMNS =
  'at, conversation_id, actor, event, tool, action, outcome, status, args_digest, approval_id, request_id';

function literal(value: string | number | undefined): string {
  if (value === undefined) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
    return String(value);
  }
  return escapeLiteral(value);
}

/** The entry as a parenthesised VALUES row of literals (the statement travels with a COMMIT, so it has no parameters). */
function valuesRow(e: PendingEntry): string {
  return `(${[
    `${literal(new Date(e.at).toISOString())}::timestamptz`,
    literal(e.conversationId),
    literal(e.actor),
    literal(e.event),
    literal(e.tool),
    literal(e.action),
    literal(e.outcome),
    literal(e.status),
    literal(e.argsDigest),
    literal(e.approvalId),
    literal(e.requestId),
  ].join(', ')})`;
}

const COLUMN_LIST = COLUMNS.split(', ');
const COLUMN_TYPES = ['timestamptz', 'text', 'text', 'text', 'text', 'text', 'text', 'int', 'text', 'text', 'text'];

/** The entry as a row a single-statement write inserts with itself (UnitsOfWork.startSingle). */
function companionOf(e: PendingEntry): CompanionRow {
  return {
    table: 'audit_pending',
    columns: COLUMN_LIST,
    types: COLUMN_TYPES,
    values: [
      new Date(e.at).toISOString(),
      e.conversationId,
      e.actor,
      e.event,
      e.tool ?? null,
      e.action ?? null,
      e.outcome,
      e.status ?? null,
      e.argsDigest ?? null,
      e.approvalId ?? null,
      e.requestId,
    ],
  };
}

function insertSql(entries: PendingEntry[]): string {
  return `INSERT INTO audit_pending (${COLUMNS}) VALUES ${entries.map(valuesRow).join(', ')}`;
}

type Row = {
  seq?: string;
  at: Date;
  conversation_id: string;
  actor: string;
  event: string;
  tool: string | null;
  action: string | null;
  outcome: string;
  status: number | null;
  args_digest: string | null;
  approval_id: string | null;
  request_id: string;
  prev_hash?: string;
  hash?: string;
};

function toPending(r: Row): PendingEntry {
  return {
    at: r.at.getTime(),
    conversationId: r.conversation_id,
    actor: r.actor,
    event: r.event as PendingEntry['event'],
    ...(r.tool !== null ? { tool: r.tool } : {}),
    ...(r.action !== null ? { action: r.action } : {}),
    outcome: r.outcome,
    ...(r.status !== null ? { status: r.status } : {}),
    ...(r.args_digest !== null ? { argsDigest: r.args_digest } : {}),
    ...(r.approval_id !== null ? { approvalId: r.approval_id } : {}),
    requestId: r.request_id,
  };
}

/** Key order as the contract lists it (the hash does not depend on it: canonical JSON sorts). */
function toEntry(r: Row): AuditEntry {
  const p = toPending(r);
  return {
    seq: Number(r.seq),
    at: p.at,
    conversationId: p.conversationId,
    actor: p.actor,
    event: p.event,
    ...(p.tool !== undefined ? { tool: p.tool } : {}),
    ...(p.action !== undefined ? { action: p.action } : {}),
    outcome: p.outcome,
    ...(p.status !== undefined ? { status: p.status } : {}),
    ...(p.argsDigest !== undefined ? { argsDigest: p.argsDigest } : {}),
    ...(p.approvalId !== undefined ? { approvalId: p.approvalId } : {}),
    requestId: p.requestId,
    prevHash: r.prev_hash!,
    hash: r.hash!,
  };
}

export interface AuditStoreOptions {
  /** A queued entry is written at most this long after it was queued. */
  flushMs: number;
  /** ... or as soon as this many are queued. */
  flushMax: number;
  /** Pending entries are sealed this long after this replica wrote some. */
  sealMs: number;
}

export const AUDIT_DEFAULTS: AuditStoreOptions = { flushMs: 5, flushMax: 500, sealMs: 250 };

export class SqlAuditStore implements AuditStore {
  private queued: PendingEntry[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private sealTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
    private readonly options: AuditStoreOptions = AUDIT_DEFAULTS,
  ) {}

  inTransaction(tx: Transaction, entry: PendingEntry): void {
    sendWithCommit(tx, insertSql([entry]));
    this.sealSoon();
  }

  ahead(unit: UnitOfWork, entry: PendingEntry): boolean {
    if (!openWith(unit, insertSql([entry]), companionOf(entry))) return false;
    this.sealSoon();
    return true;
  }

  async insert(entry: PendingEntry): Promise<void> {
    await translated(this.pool.query(insertSql([entry])));
    this.sealSoon();
  }

  enqueue(entry: PendingEntry): void {
    this.queued.push(entry);
    if (this.queued.length >= this.options.flushMax) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), this.options.flushMs);
  }

  /** Batches are written one after the other, so a flush that returns has written everything queued before it. */
  flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.queued;
    this.queued = [];
    const run = this.flushing.then(() => (batch.length > 0 ? this.write(batch) : undefined));
    this.flushing = run;
    return run;
  }

  private async write(batch: PendingEntry[]): Promise<void> {
    // One round trip; asynchronous commit: these entries are the ones docs/AUDIT.md says may be lost in a crash.
    const sql = `BEGIN; SET LOCAL synchronous_commit = off; ${insertSql(batch)}; COMMIT`;
    try {
      await this.pool.query(sql);
      this.sealSoon();
    } catch (err) {
      this.logger.error({ err, entries: batch.length }, 'audit entries could not be written');
    }
  }

  private sealSoon(): void {
    if (this.closed || this.sealTimer) return;
    this.sealTimer = setTimeout(() => {
      this.sealTimer = undefined;
      this.sealOnce(false).catch((err: unknown) => this.logger.warn({ err }, 'audit sealing failed'));
    }, this.options.sealMs);
    this.sealTimer.unref();
  }

  seal(): Promise<void> {
    return translated(this.sealOnce(true));
  }

  /**
   * With `wait`, waits for a sealer elsewhere; without, leaves the work to it.
   * The sealing itself is the database's (audit_seal, migration
   * 20260405000000): numbering, chaining and hashing run there, off this
   * process's event loop, one round trip per batch.
   */
  private async sealOnce(wait: boolean): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      for (;;) {
        // The periodic seal commits asynchronously: a seal lost in a crash took its DELETE of the
        // pending rows with it, so they are sealed again (under new seqs) and nothing is lost. A seal
        // asked for by a reader (wait) commits durably before the reader is answered.
        // One message; without `wait`, -1 when another sealer holds the lock (it does the work).
        const batch = wait
          ? `BEGIN; SELECT pg_advisory_xact_lock(${SEAL_LOCK}); SELECT audit_seal(${SEAL_BATCH}) AS moved`
          : 'BEGIN; SET LOCAL synchronous_commit = off; ' +
            `SELECT CASE WHEN pg_try_advisory_xact_lock(${SEAL_LOCK}) THEN audit_seal(${SEAL_BATCH}) ELSE -1 END AS moved`;
        let moved: number;
        try {
          const results = (await client.query(batch)) as unknown as Array<{ rows: Array<{ moved: number }> }>;
          moved = Number(results[results.length - 1]!.rows[0]!.moved);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch((e: Error) => (broken = e));
          throw err;
        }
        if (moved < SEAL_BATCH) return;
      }
    } finally {
      client.release(broken);
    }
  }

  async page(conversationId: string, after: number, limit: number): Promise<AuditEntry[]> {
    const { rows } = await prepared<Row>(
      this.pool,
      'audit_page',
      `SELECT seq, ${COLUMNS}, prev_hash, hash FROM audit_log
       WHERE conversation_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [conversationId, after, limit],
    );
    return rows.map(toEntry);
  }

  async head(conversationId: string): Promise<{ seq: number; hash: string } | undefined> {
    const { rows } = await prepared<{ seq: string; hash: string }>(
      this.pool,
      'audit_head',
      'SELECT seq, hash FROM audit_heads WHERE conversation_id = $1',
      [conversationId],
    );
    return rows[0] ? { seq: Number(rows[0].seq), hash: rows[0].hash } : undefined;
  }

  async lastDeletion(conversationId: string): Promise<number> {
    const { rows } = await prepared<{ seq: string | null }>(
      this.pool,
      'audit_last_deletion',
      "SELECT max(seq) AS seq FROM audit_log WHERE conversation_id = $1 AND event = 'conversation.deleted'",
      [conversationId],
    );
    return rows[0]?.seq == null ? 0 : Number(rows[0].seq);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.sealTimer);
    this.sealTimer = undefined;
    await this.flush();
    await this.sealOnce(true).catch((err: unknown) => this.logger.warn({ err }, 'audit sealing at close failed'));
  }
}
