/**
 * Who sees which events (API.md, Identity and access, applied to the event
 * streams): which stream a principal may open, and whether one event may go
 * to it. The feed (events.ts) applies them to every event it hands over.
 */
import type { ConversationAccess } from './access';
import { RESERVED_CONVERSATION_ID, conversationNotFound } from './errors';
import type { LoggedEvent, ReplayFilter } from './ports/events';
import { type Principal, canSee, forbidden } from './principal';

/** Whose stream, and of what: a conversation's (`GET /conversations/{id}/events`) or all the caller sees (`GET /events`). */
export interface StreamScope {
  principal: Principal;
  conversationId?: string;
}

/**
 * May `p` see event `e` on a stream of `scope`? As the conversation itself
 * (canSee) by the owner recorded with the event; an event of a conversation
 * gone before it was numbered, only admins; an event of no conversation (a
 * participant's), users and admins on `GET /events`.
 */
export function canSeeEvent(scope: StreamScope, e: LoggedEvent): boolean {
  const p = scope.principal;
  if (scope.conversationId !== undefined && e.conversationId !== scope.conversationId) return false;
  if (e.conversationId === null) return scope.conversationId === undefined && p.role !== 'agent';
  if (e.owner === undefined) return p.role === 'admin';
  return canSee(p, e.conversationId, e.owner);
}

/**
 * The stream `p` may open: `GET /events` for users and admins (an agent 403);
 * a conversation's for whoever may see it (its agents included), the same 404
 * as the conversation's for anyone else, and for a conversation that does not exist.
 */
export async function streamScope(
  access: ConversationAccess,
  p: Principal,
  conversationId?: string,
): Promise<StreamScope> {
  if (conversationId === undefined) {
    if (p.role === 'agent') {
      throw forbidden(p, "read every conversation's events (its own: GET /conversations/{id}/events)");
    }
    return { principal: p };
  }
  if (conversationId === RESERVED_CONVERSATION_ID) throw conversationNotFound(conversationId);
  await access.check(p, conversationId, 'read-resources', 'read its events');
  // An admin passes the check without a read: the conversation must still exist.
  if (p.role === 'admin' && (await access.ownerOf(conversationId)) === undefined) {
    throw conversationNotFound(conversationId);
  }
  return { principal: p, conversationId };
}

/** The coarse filter of a replay for a scope (canSeeEvent decides each event). */
export function replayFilter(scope: StreamScope): ReplayFilter {
  if (scope.conversationId !== undefined) return { conversationId: scope.conversationId };
  return scope.principal.role === 'admin' ? {} : { owner: scope.principal.subject };
}
