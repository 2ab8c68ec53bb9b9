/**
 * Webhooks (API.md, "Approvals inbox, events and webhooks"): who may create,
 * list, delete and read the delivery log of which hook, and the checks of a
 * new hook's URL and event types. The deliveries themselves are the outbox's
 * (webhook-outbox.ts).
 *
 * A user's hook sees what the user sees (its conversations, or one of them);
 * an admin's, everything (or one conversation). A hook another user made is,
 * to a user, a hook that does not exist (404); agents have none (403).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { ConversationAccess } from './access';
import type { AuditService } from './audit';
import { SYSTEM_CHAIN } from './audit';
import { AppError, RESERVED_CONVERSATION_ID, conversationNotFound } from './errors';
import { EVENT_TYPES, type EventType } from './ports/events';
import type { DeliveryAttempt, SecretSealer, StoredWebhook, WebhookStore } from './ports/webhooks';
import { type Principal, actorOf, forbidden } from './principal';

export interface WebhookInput {
  url: string;
  events: string[];
  conversationId?: string;
}

export interface CreatedWebhook extends WebhookView {
  /** `whsec_` + base64 of 24 random bytes (Standard Webhooks); in this response only. */
  secret: string;
}

export interface WebhookView {
  id: string;
  url: string;
  events: EventType[];
  conversationId: string | null;
  /** False once it failed for 24 h: nothing more is sent. */
  enabled: boolean;
  createdAt: number;
}

export interface WebhookServiceDeps {
  store: WebhookStore;
  access: ConversationAccess;
  audit: AuditService;
  sealer: SecretSealer;
  /** The participants' address rules: a reason the URL is refused, or undefined. */
  checkUrl: (url: string) => string | undefined;
}

/** Webhooks listed at most (GET /webhooks), and delivery attempts shown (GET …/deliveries). */
const LIST_LIMIT = 1000;
const DELIVERIES_SHOWN = 100;
const SECRET_BYTES = 24;
/** Entries of `events` read at most (there are ten types; repeats are dropped). */
const MAX_EVENT_ENTRIES = 100;

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function view(h: StoredWebhook): WebhookView {
  const { id, url, events, conversationId, enabled, createdAt } = h;
  return { id, url, events, conversationId, enabled, createdAt };
}

function invalid(path: string, message: string): AppError {
  return new AppError('validation_failed', `${path}: ${message}`, [{ path, message }]);
}

export function checkEventTypes(events: string[]): EventType[] {
  if (events.length === 0) throw invalid('events', 'must name at least one event type');
  if (events.length > MAX_EVENT_ENTRIES) throw invalid('events', `at most ${MAX_EVENT_ENTRIES} entries`);
  const known = new Set<string>(EVENT_TYPES);
  const unknown = events.filter((e) => !known.has(e));
  if (unknown.length > 0) {
    throw invalid('events', `unknown event type ${JSON.stringify(unknown[0])} (known: ${EVENT_TYPES.join(', ')})`);
  }
  return [...new Set(events)] as EventType[];
}

export class WebhookService {
  constructor(private readonly deps: WebhookServiceDeps) {}

  async create(p: Principal, input: WebhookInput, requestId = '-'): Promise<CreatedWebhook> {
    if (p.role === 'agent') throw forbidden(p, 'manage webhooks');
    const events = checkEventTypes(input.events);
    const refused = this.deps.checkUrl(input.url);
    if (refused !== undefined) throw invalid('url', refused);
    const conversationId = input.conversationId ?? null;
    if (conversationId !== null) await this.checkConversation(p, conversationId);
    const secret = newWebhookSecret();
    const hook = await this.deps.store.insert({
      id: randomUUID(),
      owner: p.subject,
      ownerRole: p.role,
      url: input.url,
      events,
      conversationId,
      sealedSecret: await this.deps.sealer.seal(secret),
      createdBy: actorOf(p),
      cursor: await this.deps.store.head(),
    });
    await this.deps.audit.changed(p, 'webhook.created', conversationId ?? SYSTEM_CHAIN, requestId, {
      action: hook.id,
    });
    return { ...view(hook), secret };
  }

  async list(p: Principal): Promise<WebhookView[]> {
    if (p.role === 'agent') throw forbidden(p, 'manage webhooks');
    const hooks = await this.deps.store.list(p.role === 'admin' ? undefined : p.subject, LIST_LIMIT);
    return hooks.map(view);
  }

  async delete(p: Principal, id: string, requestId = '-'): Promise<void> {
    const hook = await this.visible(p, id);
    if (await this.deps.store.delete(hook.id)) {
      await this.deps.audit.changed(p, 'webhook.deleted', hook.conversationId ?? SYSTEM_CHAIN, requestId, {
        action: hook.id,
      });
    }
  }

  async deliveries(p: Principal, id: string): Promise<DeliveryAttempt[]> {
    const hook = await this.visible(p, id);
    return this.deps.store.attempts(hook.id, DELIVERIES_SHOWN);
  }

  private async visible(p: Principal, id: string): Promise<StoredWebhook> {
    if (p.role === 'agent') throw forbidden(p, 'manage webhooks');
    const hook = await this.deps.store.get(id);
    if (!hook || (p.role !== 'admin' && hook.owner !== p.subject)) {
      throw new AppError('not_found', `Webhook not found: ${id.slice(0, 64)}`);
    }
    return hook;
  }

  /** A user's hook is for a conversation it owns (else the conversation's 404); an admin's for one that exists. */
  private async checkConversation(p: Principal, conversationId: string): Promise<void> {
    if (conversationId === RESERVED_CONVERSATION_ID) throw conversationNotFound(conversationId);
    await this.deps.access.check(p, conversationId, 'manage', 'receive its events by webhook');
    if (p.role === 'admin' && (await this.deps.access.ownerOf(conversationId)) === undefined) {
      throw conversationNotFound(conversationId);
    }
  }
}
