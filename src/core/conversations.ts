/**
 * Conversations: created explicitly (POST) or on first use (negotiate, PUT of
 * a resource or a permission); deleted with everything they own. Stored
 * through the ConversationStore port; the refusals are decided here.
 */
import { randomUUID } from 'node:crypto';
import { conversationState, type M5State } from './conversation-migration';
import { AppError, RESERVED_CONVERSATION_ID, reservedIdError, conversationNotFound } from './errors';
import type { TPolicy } from './policy';
import type { ConversationStore, ConversationView, PermissionStore, ResourceStore } from './ports';

export type { ConversationView } from './ports';

export async function createConversation(
  store: ConversationStore,
  input: { id?: string; metadata?: Record<string, unknown>; policy?: TPolicy; owner: string },
): Promise<ConversationView> {
  const id = input.id ?? randomUUID();
  if (id === RESERVED_CONVERSATION_ID) throw reservedIdError();
  const created = await store.create(id, input.metadata ?? {}, input.policy ?? { deny: [] }, input.owner);
  if (!created) throw new AppError('conflict', `Conversation already exists: ${id}`);
  return created;
}

export async function getConversation(store: ConversationStore, id: string): Promise<ConversationView> {
  const conversation = await store.get(id);
  if (!conversation) throw conversationNotFound(id);
  return conversation;
}

/** Deletes the conversation; its resources, permissions and history go with it. */
export async function deleteConversation(store: ConversationStore, id: string): Promise<void> {
  if (!(await store.delete(id))) throw conversationNotFound(id);
}

/** The conversation in the seed's M5 JSON document form. */
export async function getConversationState(
  permissions: PermissionStore,
  resources: ResourceStore,
  id: string,
): Promise<M5State> {
  const levels = await permissions.levels(id);
  if (!levels) throw conversationNotFound(id);
  return conversationState(levels.legacyLevel, levels.explicit, await resources.list(id, {}));
}
