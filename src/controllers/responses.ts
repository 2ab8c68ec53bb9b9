// The response bodies that the controllers answer with and src/controllers/examples/
// illustrates: declared here so the examples never import a controller (no import cycle).
// (A line comment: tsoa reads only the first JSDoc block of a declaration.)
import type { JsonObject, PermissionLevel, Resource } from './types';

/**
 * pending: waits on the owner; approved, rejected: decided; expired: lapsed before a decision (or an
 * approved `once` before its retry); used: its `once` retry ran; satisfied: settled without a decision,
 * because the tool's level was raised to the one it asks for, or the same principal's identical call ran.
 */
export type ApprovalStatusValue = 'pending' | 'approved' | 'rejected' | 'expired' | 'used' | 'satisfied';

/** A request for the owner's approval of exactly one refused call. */
export interface ApprovalView {
  id: string;
  conversationId: string;
  /** call: a refused action; upgrade: an agent's `upgrade:TOOL:level-N`. */
  kind: 'call' | 'upgrade';
  tool: string;
  /** The action's name, or the special action `upgrade:TOOL:level-N`. */
  action: string;
  /** The args as the refused call sent them. */
  args: JsonObject;
  /** SHA-256 (hex) of the args' canonical JSON (keys sorted recursively, no whitespace). */
  argsDigest: string;
  requiredLevel: PermissionLevel;
  /** The tool's effective level when the call was refused. */
  currentLevel: PermissionLevel;
  /** The principal whose call was refused: `agent:KEY_ID`, `user:SUBJECT`, `admin:SUBJECT`. */
  requestedBy: string;
  /** A pending request past its expiresAt reads `expired`. */
  status: ApprovalStatusValue;
  /**
   * Epoch milliseconds.
   * @isLong
   */
  createdAt: number;
  /**
   * Epoch milliseconds. Pending: when the request lapses (APPROVAL_TTL_SECONDS);
   * approved `once`: until when the retry may come; approved `conversation`: when the
   * granted level ends (null: it does not).
   * @isLong
   */
  expiresAt: number | null;
  /** Who approved or rejected it; for `satisfied`, who set the level (null: the identical call ran at the tool's level). */
  decidedBy: string | null;
  /**
   * Epoch milliseconds of the approval, rejection or settlement (`satisfied`), or null while pending.
   * @isLong
   */
  decidedAt: number | null;
  scope: 'once' | 'conversation' | null;
  /** A rejection's reason; for `satisfied`, what made the request unnecessary. */
  reason: string | null;
}

export interface ApprovalList {
  /** Newest first (at most 500). */
  approvals: ApprovalView[];
}

/** A key as listed: never its token. */
export interface ApiKey {
  id: string;
  role: 'admin' | 'user' | 'agent';
  subject: string;
  /** An agent key's conversation; null for admin and user keys. */
  conversationId: string | null;
  maxLevel: number | null;
  label: string | null;
  /** Epoch milliseconds, or null. */
  expiresAt: number | null;
  createdAt: number;
  /** The principal that minted it (`admin:SUBJECT`, `user:SUBJECT`). */
  createdBy: string;
  /** Epoch milliseconds, or null while it works. */
  revokedAt: number | null;
}

/** A key just minted: the only time its token is shown. Store it now. */
export interface CreatedApiKey extends ApiKey {
  token: string;
}

export interface KeyList {
  keys: ApiKey[];
}

export interface ToolPermission {
  tool: string;
  level: PermissionLevel;
  /** explicit: set in this conversation; legacy: the M4 level; default: 1. */
  source: 'explicit' | 'legacy' | 'default';
  /** Epoch milliseconds of the explicit level, or null. */
  upgradedAt: number | null;
}

export interface Permissions {
  conversationId: string;
  legacyLevel: number | null;
  tools: ToolPermission[];
}

export interface LevelChange {
  tool: string;
  level: PermissionLevel;
  /** The effective level before the change. */
  previousLevel: PermissionLevel;
}

export interface PermissionEvent {
  tool: string;
  /** The effective level before (null for levels carried over from M4). */
  fromLevel: number | null;
  toLevel: number;
  /** Epoch milliseconds. */
  at: number;
  /** Who changed it: `user:SUBJECT`, `admin:SUBJECT`, `agent:KEY_ID`, `m4-migration`, `expiry`; `client` and `negotiate` on rows from before identities. */
  actor: string;
}

export interface PermissionHistory {
  events: PermissionEvent[];
}

export interface ResourcePage {
  resources: Resource[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** One page of the approvals inbox (GET /approvals). */
export interface ApprovalInboxPage {
  /** Newest first. */
  approvals: ApprovalView[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * A text/event-stream (Server-Sent Events): for each event `id:` (global and increasing: send it back as
 * Last-Event-ID to resume, on any replica), `event:` (its type) and one `data:` line, the JSON
 * `{ type, conversationId, at, subject }`, where `subject` is the approval (as GET …/approvals/{approvalId}
 * gives it), the resource without `data`, the permission change (`{ tool, fromLevel, toLevel, at, actor }`),
 * or the participant concerned. Comment lines (`:`) keep the connection alive (every 15 s) or note that a
 * resume started after events no longer kept (EVENTS_RETENTION_HOURS).
 */
export type EventStream = string;

export type WebhookEventType =
  | 'approval.requested'
  | 'approval.decided'
  | 'approval.expired'
  | 'permission.changed'
  | 'resource.created'
  | 'resource.updated'
  | 'resource.deleted'
  | 'resource.expired'
  | 'participant.status_changed'
  | 'participant.action_quarantined';

export interface WebhookResponse {
  id: string;
  url: string;
  events: WebhookEventType[];
  conversationId: string | null;
  /** False once deliveries failed for 24 h: nothing more is sent. */
  enabled: boolean;
  /** Epoch milliseconds. */
  createdAt: number;
}

export interface CreatedWebhookResponse extends WebhookResponse {
  /** The signing secret (Standard Webhooks, `whsec_` + base64), in this response only. */
  secret: string;
}

export interface WebhookList {
  webhooks: WebhookResponse[];
}

export interface WebhookDelivery {
  eventId: number;
  type: WebhookEventType;
  /** From 1; retries follow the Standard Webhooks schedule. */
  attempt: number;
  status: 'delivered' | 'failed';
  /** The receiver's HTTP status, when it answered. */
  responseStatus?: number;
  /** Epoch milliseconds. */
  at: number;
  error?: string;
}

export interface WebhookDeliveryList {
  /** The last 100 attempts, newest first. */
  deliveries: WebhookDelivery[];
}

/** POST …/transactions: one result per operation, in order. */
export interface TransactionResult {
  /** The resource as its operation left it (checked, created, updated); null for a delete. */
  results: (Resource | null)[];
}
