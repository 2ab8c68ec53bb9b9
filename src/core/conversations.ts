/**
 * Conversations: created explicitly (POST) or on first use (negotiate, PUT of
 * a resource or a permission); deleted with everything they own. Stored
 * through the ConversationStore port; the refusals are decided here.
 */
import { randomUUID } from 'node:crypto';
import type { ConversationAccess } from './access';
import type { AuditService } from './audit';
import { conversationState, type M5State } from './conversation-migration';
import { AppError, RESERVED_CONVERSATION_ID, conversationNotFound, reservedIdError } from './errors';
import { type TPolicy, ZPolicy } from './policy';
import type { ConversationStore, ConversationView, PermissionStore, ResourceStore } from './ports';
import { type ConversationRight, type Principal, forbidden } from './principal';
import { isValidId } from './resource-names';
import { listPermissions } from './permissions';
import type { Level } from './tool-interface';

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

/** A conversation an endpoint uses, creating it on first use: what is checked, for which request. */
export interface FirstUse {
  conversationId: string;
  right: ConversationRight;
  /** What the caller wants to do, for a 403's detail. */
  what: string;
  /** The request's X-Request-Id, for the audit entry. */
  requestId: string;
}

/**
 * Access for an endpoint that creates the conversation on first use (a
 * resource PUT, the MCP endpoint): a user's is created, owned by it, and
 * audited as `conversation.created`; anyone else is only checked. negotiate
 * does the same from its decision's one read (negotiation-call.ts).
 */
export async function openOnFirstUse(
  deps: { access: ConversationAccess; audit?: AuditService | undefined },
  p: Principal,
  use: FirstUse,
): Promise<void> {
  if (await deps.access.checkOrCreate(p, use.conversationId, use.right, use.what)) {
    await deps.audit?.changed(p, 'conversation.created', use.conversationId, use.requestId);
  }
}

export interface ConversationServiceDeps {
  conversations: ConversationStore;
  permissions: PermissionStore;
  resources: ResourceStore;
  access: ConversationAccess;
  /** Creations and deletions are audited; without it, not. */
  audit?: AuditService;
}

/** The conversation endpoints' decisions: who may, what is refused, what is audited. */
export class ConversationService {
  constructor(private readonly deps: ConversationServiceDeps) {}

  /**
   * A page ordered by id, after the conversation `cursor` names (a cursor
   * this API returned): an admin's of all, a user's of its own; agents list
   * none (403, before the cursor is read).
   */
  async list(
    p: Principal,
    cursor: string | undefined,
    limit: number,
  ): Promise<{ conversations: ConversationView[]; nextCursor: string | null }> {
    if (p.role === 'agent') throw forbidden(p, 'list conversations');
    let after: string | undefined;
    if (cursor !== undefined) {
      after = Buffer.from(cursor, 'base64url').toString('utf8');
      if (!isValidId(after) || Buffer.from(after, 'utf8').toString('base64url') !== cursor) {
        throw new AppError('validation_failed', 'cursor is not one this API returned', [
          { path: 'cursor', message: 'invalid cursor' },
        ]);
      }
    }
    const rows = await this.deps.conversations.list({
      ...(p.role === 'user' ? { owner: p.subject } : {}),
      ...(after !== undefined ? { after } : {}),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const next = rows.length > limit ? Buffer.from(page[page.length - 1]!.id, 'utf8').toString('base64url') : null;
    return { conversations: page, nextCursor: next };
  }

  /**
   * POST /conversations: owned by `p` (never an agent: refused before its
   * body is read), audited as `conversation.created`. `policy` as the client sent it.
   */
  async create(
    p: Principal,
    input: { id?: string; metadata?: Record<string, unknown>; policy?: unknown },
    requestId: string,
  ): Promise<ConversationView> {
    if (p.role === 'agent') throw forbidden(p, 'create conversations');
    let policy: TPolicy | undefined;
    if (input.policy !== undefined) {
      const parsed = ZPolicy.safeParse(input.policy);
      if (!parsed.success) {
        const errors = parsed.error.issues.map((i) => ({ path: ['policy', ...i.path].join('.'), message: i.message }));
        throw new AppError('validation_failed', errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors);
      }
      policy = parsed.data;
    }
    const conv = await createConversation(this.deps.conversations, {
      ...(input.id !== undefined ? { id: input.id } : {}),
      ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
      ...(policy !== undefined ? { policy } : {}),
      owner: p.subject,
    });
    await this.deps.audit?.changed(p, 'conversation.created', conv.id, requestId);
    return conv;
  }

  /** Access to a conversation that `p`'s use creates when it is new (openOnFirstUse). */
  openOnFirstUse(p: Principal, use: FirstUse): Promise<void> {
    return openOnFirstUse(this.deps, p, use);
  }

  async get(p: Principal, id: string): Promise<ConversationView> {
    await this.deps.access.check(p, id, 'manage', 'read the conversation');
    return getConversation(this.deps.conversations, id);
  }

  /** The policy negotiate applies in it, for `p` that may use it (tool definitions leave out what it denies). */
  async policy(p: Principal, id: string): Promise<TPolicy> {
    await this.deps.access.check(p, id, 'negotiate', 'use this conversation');
    return (await getConversation(this.deps.conversations, id)).policy;
  }

  /** What the system prompt says of it, for `p` that may use it: its policy and each of `tools`' level. */
  async promptContext(
    p: Principal,
    id: string,
    tools: readonly string[],
  ): Promise<{ policy: TPolicy; levels: Record<string, Level> }> {
    await this.deps.access.check(p, id, 'negotiate', 'use this conversation');
    const conversation = await getConversation(this.deps.conversations, id);
    const permissions = await listPermissions(this.deps.permissions, id, tools);
    return { policy: conversation.policy, levels: Object.fromEntries(permissions.tools.map((t) => [t.tool, t.level])) };
  }

  /** DELETE /conversations/{id}: with everything it owns, audited as `conversation.deleted`. */
  async delete(p: Principal, id: string, requestId: string): Promise<void> {
    await this.deps.access.check(p, id, 'manage', 'delete the conversation');
    await deleteConversation(this.deps.conversations, id);
    await this.deps.audit?.changed(p, 'conversation.deleted', id, requestId);
  }

  async state(p: Principal, id: string): Promise<M5State> {
    await this.deps.access.check(p, id, 'manage', 'read the conversation state');
    return getConversationState(this.deps.permissions, this.deps.resources, id);
  }
}
