/**
 * Wires the domain services for one database: the tool registry (bundled
 * tools plus TOOLS_DIR), the catalog (tool set + router) and the manager.
 * Shared by the entry file and the tests, so both run the same wiring.
 */
import { Authenticator, type AuthenticatorOptions } from './auth/authenticator';
import { createJwtVerifier, looksLikeJwt } from './auth/jwt';
import type { Config } from './config';
import { ConversationAccess } from './core/access';
import { ApprovalInbox } from './core/approval-inbox';
import { ApprovalService } from './core/approvals';
import { AuditService } from './core/audit';
import { ConversationManager } from './core/conversation-manager';
import { ConversationService } from './core/conversations';
import { EventFeed } from './core/events';
import { HeldCalls } from './core/held-calls';
import { IdempotentNegotiation } from './core/idempotency';
import { KeyService } from './core/keys';
import { PermissionService } from './core/permissions';
import { ResourceExpiry } from './core/resource-expiry';
import { ResourceService } from './core/resource-service';
import { ToolCatalog } from './core/tool-catalog';
import { ToolRegistry, type ToolRegistryOptions } from './core/tool-registry';
import type { Database } from './db/database';
import { SqlApprovalStore, countPendingApprovals } from './db/approval-store';
import { AUDIT_DEFAULTS, type AuditStoreOptions, SqlAuditStore } from './db/audit-store';
import { SqlEventLog } from './db/event-log';
import { eventWakeups } from './db/event-wakeups';
import { negotiationStatus } from './http/negotiate-status';
import { PROBLEM_STATUS, type ProblemCode } from './http/problem';
import { openStores } from './db/stores';
import { SqlParticipantStore } from './db/participant-store';
import { Participants } from './participants/participants';
import { addressRules } from './participants/participant-addresses';
import { SecretBox, loadSecretsKey } from './participants/secrets';
import { SqlWebhookStore } from './db/webhook-store';
import { webhookSender } from './http/webhook-sender';
import { WebhookService } from './core/webhooks';
import { WebhookOutbox, type WebhookOutboxOptions } from './core/webhook-outbox';
import type { SecretSealer } from './core/ports';
import { SubscriptionRunner, type SubscriptionRunnerOptions } from './core/subscriptions';
import { SubscriptionFailures } from './core/subscription-failures';
import { SqlSubscriptionStore } from './db/subscription-store';
import { TransactionService } from './core/transactions';
import type { Logger } from './logger';
import type { Services } from './services';
import { Metrics } from './observability/metrics';
import { negotiationObserver } from './observability/observer';
import { activeTracing } from './observability/tracing-state';

/**
 * How often each replica reads the event log while it serves a stream: the
 * 1 s delivery bound with room to spare, at one indexed query per replica (a
 * notification reads it at once: approvals, batches another replica numbered).
 */
const EVENTS_POLL_MS = 250;

export interface Wired {
  services: Services;
  registry: ToolRegistry;
}

/** Tests' settings of the two outboxes: the webhooks' (these keys) and the subscriptions'. */
export type OutboxOptions = Pick<WebhookOutboxOptions, 'retryScheduleMs' | 'disableAfterMs' | 'sweepMs'> & {
  subscriptions?: Pick<SubscriptionRunnerOptions, 'retryScheduleMs' | 'sweepMs'>;
};

export function wireServices(
  config: Config,
  logger: Logger,
  db: Database,
  registryOverrides: Pick<ToolRegistryOptions, 'debounceMs' | 'loadTimeoutMs' | 'isolateToolsDir'> = {},
  authOptions: AuthenticatorOptions = {},
  auditOptions: AuditStoreOptions = AUDIT_DEFAULTS,
  outboxOptions: OutboxOptions = {},
): Wired {
  const { subscriptions: subscriptionOptions, ...webhookOptions } = outboxOptions;
  const registry = new ToolRegistry({
    extraDir: config.toolsDir,
    hotReload: config.toolsHotReload,
    logger: logger.child({ component: 'tool-registry' }),
    ...registryOverrides,
  });
  const catalog = new ToolCatalog(registry, config.routerMinConfidence);
  const stores = openStores(db, { queryTimeoutMs: config.queryTimeoutMs });
  const access = new ConversationAccess(stores.conversations);
  const audit = new AuditService(
    new SqlAuditStore(db.pool, logger.child({ component: 'audit' }), auditOptions),
    access,
    negotiationStatus,
    Date.now,
    (code) => (code in PROBLEM_STATUS ? PROBLEM_STATUS[code as ProblemCode] : undefined),
  );
  const resources = new ResourceService(stores.resources, stores.conversations, config.resourceMaxBytes, {
    access,
    audit,
  });
  const conversations = new ConversationService({
    conversations: stores.conversations,
    permissions: stores.permissions,
    resources: stores.resources,
    access,
    audit,
  });
  const permissions = new PermissionService({
    store: stores.permissions,
    units: stores.units,
    access,
    tools: () => catalog.snapshot().set.tools.map((t) => t.name),
    audit,
  });
  const approvalStore = new SqlApprovalStore(db.pool);
  const approvals = new ApprovalService(
    approvalStore,
    stores.conversations,
    { ttlSeconds: config.approvalTtlSeconds, logger: logger.child({ component: 'approvals' }) },
    { levels: permissions, units: stores.units, audit },
  );
  const metrics = config.metricsEnabled
    ? new Metrics({ pool: db.pool, pendingApprovals: () => countPendingApprovals(db.pool), logger })
    : undefined;
  const manager = new ConversationManager({
    approvals,
    decisions: stores.decisions,
    levels: permissions,
    conversations: stores.conversations,
    units: stores.units,
    resources,
    catalog,
    logger: logger.child({ component: 'tools' }),
    exportDir: config.exportDir,
    toolTimeoutMs: config.toolTimeoutMs,
    audit,
    observer: negotiationObserver(metrics, activeTracing()),
  });
  const idempotency = new IdempotentNegotiation({
    store: stores.idempotency,
    units: stores.units,
    negotiate: (p, id, req, keeper, meta) => manager.negotiate(p, id, req, { keeper, meta }),
    statusOf: negotiationStatus,
  });
  const events = new EventFeed(
    new SqlEventLog(db.pool),
    {
      pollMs: EVENTS_POLL_MS,
      retentionHours: config.eventsRetentionHours,
      logger: logger.child({ component: 'events' }),
    },
    eventWakeups(db, logger.child({ component: 'events' })),
  );
  const held = new HeldCalls({
    listen: (listener) => events.listen(listener),
    status: (conversationId, approvalId) => approvals.statusOf(conversationId, approvalId),
    maxPerPrincipal: config.approvalMaxHeldPerPrincipal,
    logger: logger.child({ component: 'held-calls' }),
  });
  const keys = new KeyService(stores.keys, access, audit);
  const participants = new Participants({
    store: new SqlParticipantStore(db.pool),
    registry,
    audit,
    logger: logger.child({ component: 'participants' }),
    metrics: metrics?.participants,
    config,
  });
  const webhooks = wireWebhooks(config, logger, db, { access, audit, events, ...webhookOptions });
  // Tools' handlers of resource events (API.md, "Shared context, M6", Subscriptions).
  const subscriptionStore = new SqlSubscriptionStore(db.pool);
  const subscriptions = new SubscriptionRunner({
    store: subscriptionStore,
    feed: events,
    tools: () => (registry.ready ? registry.current().tools : undefined),
    units: stores.units,
    resources,
    audit,
    logger: logger.child({ component: 'subscriptions' }),
    exportDir: config.exportDir,
    toolTimeoutMs: config.toolTimeoutMs,
    ...subscriptionOptions,
  });
  const authenticator = new Authenticator(
    stores.keys,
    logger.child({ component: 'auth' }),
    { adminApiKey: config.adminApiKey, jwt: config.jwt ? createJwtVerifier(config.jwt) : undefined, looksLikeJwt },
    authOptions,
  );
  return {
    services: {
      config,
      logger,
      db,
      stores,
      catalog,
      manager,
      idempotency,
      resources,
      transactions: new TransactionService({
        resources,
        conversations: stores.conversations,
        units: stores.units,
        access,
        audit,
      }),
      access,
      keys,
      authenticator,
      approvals,
      inbox: new ApprovalInbox(approvalStore),
      events,
      held,
      permissions,
      conversations,
      audit,
      metrics,
      participants,
      webhooks: webhooks.service,
      webhookOutbox: webhooks.outbox,
      expiry: new ResourceExpiry({
        store: stores.resources,
        units: stores.units,
        audit,
        logger: logger.child({ component: 'resources' }),
        intervalMs: config.resourceSweepIntervalMs,
      }),
      subscriptions,
      subscriptionFailures: new SubscriptionFailures(subscriptionStore, access),
    },
    registry,
  };
}

/**
 * Webhooks: their secrets sealed with the participants' key (SECRETS_KEY or
 * DATA_DIR/secrets.key, whose fingerprint the participants check at start),
 * their URLs under the participants' address rules, sent through a guarded
 * fetch of their own.
 */
function wireWebhooks(
  config: Config,
  logger: Logger,
  db: Database,
  deps: { access: ConversationAccess; audit: AuditService; events: EventFeed } & Pick<
    WebhookOutboxOptions,
    'retryScheduleMs' | 'disableAfterMs' | 'sweepMs'
  >,
): { service: WebhookService; outbox: WebhookOutbox } {
  let box: Promise<SecretBox> | undefined;
  const openBox = (): Promise<SecretBox> => {
    box ??= loadSecretsKey({
      ...(config.secretsKey !== undefined ? { secretsKey: config.secretsKey } : {}),
      dataDir: config.dataDir,
    }).then(({ key }) => SecretBox.fromKey(key));
    box.catch(() => (box = undefined));
    return box;
  };
  const sealer: SecretSealer = {
    seal: async (secret) => (await openBox()).seal(secret),
    open: async (sealed) => (await openBox()).open<string>(sealed),
  };
  const rules = addressRules(config.participantAllowedHosts);
  const store = new SqlWebhookStore(db.pool);
  const { access, audit, events, ...options } = deps;
  return {
    service: new WebhookService({ store, access, audit, sealer, checkUrl: rules.check }),
    outbox: new WebhookOutbox({
      store,
      feed: events,
      sender: webhookSender(rules.fetch),
      sealer,
      logger: logger.child({ component: 'webhooks' }),
      timeoutMs: config.webhookTimeoutMs,
      close: () => rules.fetch.close(),
      ...options,
    }),
  };
}
