/** The audit log's port and the entries it keeps (src/core/audit.ts uses it; src/db/audit-store.ts implements it). */
import type { Transaction, UnitOfWork } from './units';

/** What an entry records. The approval events are written by the approvals code. */
export type AuditEvent =
  | 'negotiate'
  | 'negotiate.dry_run'
  | 'permission.changed'
  | 'key.created'
  | 'key.revoked'
  /** Webhooks, in the system chain (their conversation's when they have one): names only, never the secret. */
  | 'webhook.created'
  | 'webhook.deleted'
  /** A committed POST …/transactions: `action` lists `op:name@version` per operation, never the data. */
  | 'resources.transaction'
  | 'conversation.created'
  | 'conversation.deleted'
  | 'approval.requested'
  | 'approval.decided'
  /** A resource removed at its expiry, by `expiry`: its name in `action` (written by a trigger: migration 20260701000000). */
  | 'resource.expired'
  /** A tool's subscription handler ran for a resource event (actor `tool:NAME`, requestId `event:ID`). */
  | 'subscription.handled'
  /** Participants (remote tools), in the system chain: by an admin, a user (credentials) or a refresh. */
  | 'participant.registered'
  | 'participant.changed'
  | 'participant.deleted'
  | 'participant.action_quarantined'
  | 'participant.action_approved'
  | 'participant.credentials_set'
  | 'participant.credentials_removed';

/** The caller's part of an entry; `at` is the moment of recording. */
export interface AuditFields {
  conversationId: string;
  /** As in the permission history: `user:S`, `admin:S`, `agent:KEYID` (actorOf), `expiry`. */
  actor: string;
  /** The request's X-Request-Id. */
  requestId: string;
  /** `success`, or the outcome's code (`permission_required`, `tool_error`, …). */
  outcome: string;
  tool?: string;
  action?: string;
  /** The HTTP status REST gives the outcome. */
  status?: number;
  /** SHA-256 hex of the args' canonical JSON (argsDigest()); the args themselves are never stored. */
  argsDigest?: string;
  approvalId?: string;
}

/** An entry before sealing. */
export interface PendingEntry extends AuditFields {
  event: AuditEvent;
  /** Epoch milliseconds. */
  at: number;
}

/** A sealed entry, as GET …/audit shows it. Absent optional fields are absent (not null) in the hash too. */
export interface AuditEntry {
  seq: number;
  at: number;
  conversationId: string;
  actor: string;
  event: string;
  tool?: string;
  action?: string;
  outcome: string;
  status?: number;
  argsDigest?: string;
  approvalId?: string;
  requestId: string;
  prevHash: string;
  hash: string;
}

/** Where entries go (src/db/audit-store.ts). */
export interface AuditStore {
  /** Written by `tx`'s COMMIT (sent with it: no round trip of its own); gone if it rolls back. */
  inTransaction(tx: Transaction, entry: PendingEntry): void;
  /**
   * Written by `unit`'s BEGIN, if it begins (src/db sends it with the BEGIN): before its
   * writes, so not while it holds their row locks; gone if it rolls back.
   * False when the unit had begun already (nothing written).
   */
  ahead(unit: UnitOfWork, entry: PendingEntry): boolean;
  /** Committed before it resolves. */
  insert(entry: PendingEntry): Promise<void>;
  /** Written in a batch within the flush interval (lost if the process dies before). */
  enqueue(entry: PendingEntry): void;
  /** Writes what is queued now. */
  flush(): Promise<void>;
  /** Moves every committed pending entry into the log (waits for a sealer running elsewhere). */
  seal(): Promise<void>;
  /** Sealed entries after `after`, oldest first. */
  page(conversationId: string, after: number, limit: number): Promise<AuditEntry[]>;
  head(conversationId: string): Promise<{ seq: number; hash: string } | undefined>;
  /** The seq of the id's last `conversation.deleted` entry (0 when none): where its current conversation's entries begin. */
  lastDeletion(conversationId: string): Promise<number>;
  /** Flushes, seals and stops its timers. */
  close(): Promise<void>;
}
