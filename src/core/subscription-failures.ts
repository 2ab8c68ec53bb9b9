/**
 * GET /conversations/{id}/subscriptions/failures (API.md, "Shared context,
 * M6", Subscriptions): the handlers given up (retried past the schedule) or
 * cut (a chain deeper than the limit) in a conversation, newest first. Who
 * may read them: as the audit log (owner, admin; an agent 403 in its own
 * conversation), since they name tools and their errors.
 */
import type { ConversationAccess } from './access';
import { conversationNotFound } from './errors';
import type { SubscriptionFailure, SubscriptionStore } from './ports/subscriptions';
import type { Principal } from './principal';

export class SubscriptionFailures {
  constructor(
    private readonly store: Pick<SubscriptionStore, 'failures'>,
    private readonly access: ConversationAccess,
  ) {}

  async list(p: Principal, conversationId: string, limit: number): Promise<SubscriptionFailure[]> {
    await this.access.check(p, conversationId, 'manage', 'read subscription failures');
    // An admin passes the check without a read: a conversation that does not exist is still not found.
    if (p.role === 'admin' && (await this.access.ownerOf(conversationId)) === undefined) {
      throw conversationNotFound(conversationId);
    }
    return this.store.failures(conversationId, limit);
  }
}
