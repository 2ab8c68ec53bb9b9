/**
 * Who calls (API.md, Identity and access): a principal is an authenticated
 * caller with one of three roles. The transports authenticate (src/auth) and
 * hand the principal to the domain, which decides here what it may do.
 *
 * - admin: everything, on every conversation.
 * - user: creates conversations (and owns them); everything on its own.
 * - agent: a key bound to one conversation, minted by its owner: negotiate,
 *   the MCP endpoint and reading resources there; never changes permissions,
 *   policy or keys, never approves. `maxLevel` is a ceiling on its calls.
 */
import { AppError, conversationNotFound } from './errors';
import type { Level } from './tool-interface';

export type Role = 'admin' | 'user' | 'agent';
export const ROLES: readonly Role[] = ['admin', 'user', 'agent'];

export interface Principal {
  role: Role;
  /** The owner name a user or admin gives to what it creates; an agent's is its conversation's owner. */
  subject: string;
  /** The API key it authenticated with (absent for a JWT). */
  keyId?: string;
  /** An agent's one conversation. */
  conversationId?: string;
  /** An agent key's ceiling: none of its calls above this level runs. */
  maxLevel?: Level;
}

/** The permission history's and the audit's name for a principal. */
export function actorOf(p: Principal): string {
  return p.role === 'agent' ? `agent:${p.keyId ?? '?'}` : `${p.role}:${p.subject}`;
}

/** One principal, whatever its token: an API key by its id, a JWT's caller by role and subject (budgets, MCP sessions). */
export function principalKey(p: Principal): string {
  return p.keyId !== undefined ? `key:${p.keyId}` : `${p.role}:${p.subject}`;
}

/** What can be done under /conversations/{id}; each right is granted to some roles. */
export type ConversationRight =
  /** negotiate and the MCP endpoint */
  | 'negotiate'
  /** list and read its resources */
  | 'read-resources'
  /** everything else: the conversation object, state, permissions, policy, resources written over REST, keys, approvals, audit */
  | 'manage';

/**
 * Whether the principal may see conversation `id` at all (a conversation it
 * may not see answers 404 for everything under it). `owner` is null for
 * conversations from before ownership (M4 migrated), which only admins see.
 */
export function canSee(p: Principal, id: string, owner: string | null): boolean {
  switch (p.role) {
    case 'admin':
      return true;
    case 'user':
      return owner !== null && owner === p.subject;
    case 'agent':
      // The conversation it was minted for: that id, owned by whom the key acts for (its subject). The
      // same id deleted and created again by another user is another conversation, whatever the key's
      // revocation has reached yet. An ownerless one (M4) only an admin could give it.
      return p.conversationId === id && (owner === null || owner === p.subject);
  }
}

export function hasRight(p: Principal, right: ConversationRight): boolean {
  if (p.role !== 'agent') return true;
  return right === 'negotiate' || right === 'read-resources';
}

/** May the principal create conversation `id` (on first use)? Agents never create. */
export function canCreate(p: Principal): boolean {
  return p.role !== 'agent';
}

export function forbidden(p: Principal, what: string): AppError {
  return new AppError('forbidden', `A principal with role ${p.role} may not ${what}`);
}

/**
 * The decision for a conversation that exists (owner known) or not
 * (`owner` undefined): 404 when it may not be seen, 403 when seen without
 * the right. Returns nothing when allowed.
 */
export function checkConversationAccess(
  p: Principal,
  id: string,
  owner: string | null | undefined,
  right: ConversationRight,
  what: string,
): void {
  if (owner === undefined || !canSee(p, id, owner)) throw conversationNotFound(id);
  if (!hasRight(p, right)) throw forbidden(p, what);
}
