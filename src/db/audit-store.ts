/**
 * The AuditStore port (src/core/audit.ts) in SQL: the pending table, the
 * batch writer for queued entries, the sealer that chains them into
 * `audit_log`, and the reads.
 *
 * Crash guarantees (README, Audit):
 * - an entry given a transaction is sent with its COMMIT: both or neither;
 * - an entry inserted at once is committed before the call returns;
 * - a queued entry is written within `flushMs` (or sooner, `flushMax`
 *   entries at a time) with asynchronous commit: one acknowledged to the
 *   client may be lost if the process (or Postgres) dies in that window;
 * - sealing moves committed pending entries in one transaction, so an entry
 *   is pending or sealed, never lost or doubled.
 */
import { escapeLiteral, type Pool, type PoolClient } from 'pg';
import { type AuditEntry, type AuditStore, type PendingEntry, chainEntries } from '../core/audit';
import type { CompanionRow, Transaction, UnitOfWork } from '../core/ports';
import type { Logger } from '../logger';
import { prepared, translated } from './sql';
import { sendWithCommit } from './unit-of-work';

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
    if (!unit.openWith(insertSql([entry]), companionOf(entry))) return false;
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
    // One round trip; asynchronous commit: these entries are the ones the README says may be lost in a crash.
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

  /** With `wait`, waits for a sealer elsewhere; without, leaves the work to it. */
  private async sealOnce(wait: boolean): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      for (;;) {
        // The periodic seal commits asynchronously: a seal lost in a crash took its DELETE of the
        // pending rows with it, so they are sealed again (under new seqs) and nothing is lost. A seal
        // asked for by a reader (wait) commits durably before the reader is answered.
        await client.query(wait ? 'BEGIN' : 'BEGIN; SET LOCAL synchronous_commit = off');
        try {
          const moved = await this.sealBatch(client, wait);
          await client.query('COMMIT');
          if (moved < SEAL_BATCH) return;
        } catch (err) {
          await client.query('ROLLBACK').catch((e: Error) => (broken = e));
          throw err;
        }
      }
    } finally {
      client.release(broken);
    }
  }

  /** The entries moved (-1 when another sealer holds the lock and `wait` is false). */
  private async sealBatch(client: PoolClient, wait: boolean): Promise<number> {
    if (wait) {
      await client.query('SELECT pg_advisory_xact_lock($1)', [SEAL_LOCK]);
    } else {
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [SEAL_LOCK]);
      if (!rows[0]?.ok) return -1;
    }
    const { rows } = await client.query<Row & { id: string }>(
      `DELETE FROM audit_pending WHERE id IN (SELECT id FROM audit_pending ORDER BY id LIMIT $1)
       RETURNING id, ${COLUMNS}`,
      [SEAL_BATCH],
    );
    if (rows.length === 0) return 0;
    rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    const ids = [...new Set(rows.map((r) => r.conversation_id))];
    const heads = await client.query<{ conversation_id: string; hash: string }>(
      'SELECT conversation_id, hash FROM audit_heads WHERE conversation_id = ANY($1)',
      [ids],
    );
    const seqs = await client.query<{ seq: string }>("SELECT nextval('audit_seq') AS seq FROM generate_series(1, $1)", [
      rows.length,
    ]);
    const numbers = seqs.rows.map((r) => Number(r.seq)).sort((a, b) => a - b);
    const sealed = chainEntries(
      rows.map((r, i) => ({ entry: toPending(r), seq: numbers[i]! })),
      new Map(heads.rows.map((h) => [h.conversation_id, h.hash])),
    );
    await client.query(
      `INSERT INTO audit_log (seq, ${COLUMNS}, prev_hash, hash)
       SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[],
                            $7::text[], $8::text[], $9::int[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])`,
      [
        sealed.map((e) => e.seq),
        sealed.map((e) => new Date(e.at)),
        sealed.map((e) => e.conversationId),
        sealed.map((e) => e.actor),
        sealed.map((e) => e.event),
        sealed.map((e) => e.tool ?? null),
        sealed.map((e) => e.action ?? null),
        sealed.map((e) => e.outcome),
        sealed.map((e) => e.status ?? null),
        sealed.map((e) => e.argsDigest ?? null),
        sealed.map((e) => e.approvalId ?? null),
        sealed.map((e) => e.requestId),
        sealed.map((e) => e.prevHash),
        sealed.map((e) => e.hash),
      ],
    );
    // Each chain's new head: its last entry in this batch.
    const last = new Map(sealed.map((e) => [e.conversationId, e]));
    await client.query(
      `INSERT INTO audit_heads (conversation_id, seq, hash)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])
       ON CONFLICT (conversation_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash`,
      [[...last.keys()], [...last.values()].map((e) => e.seq), [...last.values()].map((e) => e.hash)],
    );
    return rows.length;
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
