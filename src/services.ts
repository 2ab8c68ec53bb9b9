/**
 * What the HTTP layer is given: configuration, a logger, the database and the
 * domain services. Built by the entry file (or a test) and handed to buildApp.
 */
import type { Authenticator } from './auth/authenticator';
import type { Config } from './config';
import type { ConversationAccess } from './core/access';
import type { ApprovalInbox } from './core/approval-inbox';
import type { ApprovalService } from './core/approvals';
import type { AuditService } from './core/audit';
import type { ConversationManager } from './core/conversation-manager';
import type { ConversationService } from './core/conversations';
import type { EventFeed } from './core/events';
import type { HeldCalls } from './core/held-calls';
import type { IdempotentNegotiation } from './core/idempotency';
import type { KeyService } from './core/keys';
import type { PermissionService } from './core/permissions';
import type { Stores } from './core/ports';
import type { ResourceExpiry } from './core/resource-expiry';
import type { ResourceService } from './core/resource-service';
import type { ToolCatalog } from './core/tool-catalog';
import type { TransactionService } from './core/transactions';
import type { Database } from './db/database';
import type { Logger } from './logger';
import type { Metrics } from './observability/metrics';
import type { Participants } from './participants/participants';
import type { WebhookService } from './core/webhooks';
import type { WebhookOutbox } from './core/webhook-outbox';
import type { SubscriptionRunner } from './core/subscriptions';
import type { SubscriptionFailures } from './core/subscription-failures';

export interface Services {
  config: Config;
  logger: Logger;
  db: Database;
  /** The domain's ports on `db`. */
  stores: Stores;
  catalog: ToolCatalog;
  manager: ConversationManager;
  /** negotiate with an Idempotency-Key. */
  idempotency: IdempotentNegotiation;
  resources: ResourceService;
  /** POST …/transactions: a client's operations, all or nothing. */
  transactions: TransactionService;
  /** Who may do what under /conversations/{id}. */
  access: ConversationAccess;
  keys: KeyService;
  /** Approval requests, decisions, and the sweep of lapsed ones (started with the authenticator). */
  approvals: ApprovalService;
  /** GET /approvals: the approvals of every conversation the caller owns (admins: all). */
  inbox: ApprovalInbox;
  /** The event feed (GET /events): this replica's one reader of the event log, fanned out to its streams. */
  events: EventFeed;
  /** Calls held until their approval is decided (Prefer: wait, MCP_APPROVAL_WAIT_SECONDS); released at shutdown. */
  held: HeldCalls;
  /** Conversations: list, create, read, delete, state (who may, and their audit). */
  conversations: ConversationService;
  /** Levels (read, history, set: the one home of a level change). */
  permissions: PermissionService;
  /** The audit log: `audit.record(event, fields, tx?)` (src/core/audit.ts). */
  audit: AuditService;
  /** Bearer token → principal. */
  authenticator: Authenticator;
  /** Prometheus metrics (GET /metrics); undefined with METRICS_ENABLED=false. */
  metrics: Metrics | undefined;
  /** Remote tools (API.md, Participants): `service` for REST; start() after migrations, close() at shutdown. */
  participants: Participants;
  /** REST: POST/GET/DELETE /webhooks and their delivery log. */
  webhooks: WebhookService;
  /** The durable outbox's dispatcher: start() once migrated (the entry file), close() at shutdown. */
  webhookOutbox: WebhookOutbox;
  /** Deletes expired resources (API.md TTL): start() once migrated (the entry file), stop() at shutdown. */
  expiry: ResourceExpiry;
  /** Tools' handlers of resource events: start() once migrated (the entry file), close() at shutdown. */
  subscriptions: SubscriptionRunner;
  /** REST: GET /conversations/{id}/subscriptions/failures. */
  subscriptionFailures: SubscriptionFailures;
}
