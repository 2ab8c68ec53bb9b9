/**
 * Who sees which event (src/core/event-access.ts), as a table: each role on
 * `GET /events` and on a conversation's stream, against events of its own
 * conversation, another's, an ownerless (M4) one, one deleted before the
 * event was numbered, and an event of no conversation (a participant's).
 */
import { canSeeEvent } from '../../src/core/event-access';
import type { LoggedEvent } from '../../src/core/ports';
import type { Principal } from '../../src/core/principal';

const admin: Principal = { role: 'admin', subject: 'root' };
const alice: Principal = { role: 'user', subject: 'alice' };
const agent: Principal = { role: 'agent', subject: 'alice', keyId: 'k1', conversationId: 'c-alice' };

function event(conversationId: string | null, owner: string | null | undefined): LoggedEvent {
  return { id: 1, type: 'resource.created', conversationId, at: 0, owner, subject: {} };
}

const events = {
  own: event('c-alice', 'alice'),
  other: event('c-bob', 'bob'),
  ownerless: event('c-m4', null),
  gone: event('c-alice', undefined),
  recreated: event('c-alice', 'bob'),
  participant: event(null, null),
};

describe('canSeeEvent', () => {
  it.each([
    // principal, stream of, event, sees
    [admin, undefined, 'own', true],
    [admin, undefined, 'other', true],
    [admin, undefined, 'ownerless', true],
    [admin, undefined, 'gone', true],
    [admin, undefined, 'participant', true],
    [admin, 'c-alice', 'own', true],
    [admin, 'c-alice', 'other', false],
    [admin, 'c-alice', 'participant', false],
    [alice, undefined, 'own', true],
    [alice, undefined, 'other', false],
    [alice, undefined, 'ownerless', false],
    [alice, undefined, 'gone', false],
    [alice, undefined, 'recreated', false],
    [alice, undefined, 'participant', true],
    [alice, 'c-alice', 'own', true],
    [alice, 'c-alice', 'participant', false],
    [agent, 'c-alice', 'own', true],
    [agent, 'c-alice', 'gone', false],
    [agent, 'c-alice', 'recreated', false],
    [agent, 'c-alice', 'other', false],
    [agent, 'c-alice', 'participant', false],
    [agent, 'c-bob', 'other', false],
    [agent, undefined, 'participant', false],
  ] as const)('%o on %s, event %s: %s', (principal, conversationId, which, sees) => {
    const scope = conversationId === undefined ? { principal } : { principal, conversationId };
    expect(canSeeEvent(scope, events[which])).toBe(sees);
  });
});
