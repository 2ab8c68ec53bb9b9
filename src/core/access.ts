/**
 * Who may do what under /conversations/{id} (API.md, Identity and access),
 * for the REST endpoints: a principal that may not see the conversation gets
 * 404, whatever exists; one that sees it without the right gets 403.
 * negotiate decides the same from the owner it reads with its decision
 * (conversation-manager.ts), without a round trip of its own.
 */
import type { ConversationStore } from './ports';
import { type ConversationRight, type Principal, checkConversationAccess } from './principal';
import { conversationNotFound } from './errors';

export class ConversationAccess {
  constructor(private readonly conversations: ConversationStore) {}

  /**
   * Allows or throws. An admin sees every conversation (the endpoint itself
   * reports a missing one) without a round trip; an agent any other than the
   * one its key names neither. Users, and agents in their conversation (whose
   * owner must still be the key's), cost one.
   */
  async check(p: Principal, id: string, right: ConversationRight, what: string): Promise<void> {
    if (p.role === 'admin') return;
    if (p.role === 'agent' && p.conversationId !== id) throw conversationNotFound(id);
    checkConversationAccess(p, id, await this.conversations.owner(id), right, what);
  }

  /** The conversation's owner: a subject, null (from before identities), undefined when it does not exist. */
  ownerOf(id: string): Promise<string | null | undefined> {
    return this.conversations.owner(id);
  }

  /**
   * The same for endpoints that create the conversation on first use: a
   * user's is created, owned by it. True when this call created it.
   */
  async checkOrCreate(p: Principal, id: string, right: ConversationRight, what: string): Promise<boolean> {
    if (p.role === 'user') {
      const { owner, created } = await this.conversations.ensure(id, p.subject);
      checkConversationAccess(p, id, owner, right, what);
      return created;
    }
    await this.check(p, id, right, what);
    return false;
  }
}
