/**
 * The SQL statements the service sends while `fn` runs, as they reach pg's
 * Client (a named statement by its name, other text as it is). Left out:
 * what runs in the background whatever the request (the authenticator's
 * revocation poll, and the audit's batch writes and seals, which run on
 * timers: every statement of a connection that ran one of them is theirs).
 */
import { Client } from 'pg';

type Sent = string | { name?: string; text: string };

function textOf(q: Sent): string {
  return (typeof q === 'string' ? q : (q.name ?? q.text)).trim();
}

/** Background audit work: a batch of queued entries, or a seal. */
function isAuditBackground(q: Sent): boolean {
  const text = typeof q === 'string' ? q : q.text;
  return /^BEGIN; SET LOCAL synchronous_commit = off;/.test(text.trim()) || /\baudit_seal\(/.test(text);
}

export async function sqlStatements(fn: () => Promise<unknown>): Promise<string[]> {
  const spy = jest.spyOn(Client.prototype, 'query');
  try {
    await fn();
    const calls = spy.mock.calls.map((c, i) => ({ q: c[0], client: spy.mock.contexts[i] }));
    const background = new Set(calls.filter((c) => isAuditBackground(c.q)).map((c) => c.client));
    return calls
      .filter((c) => !background.has(c.client))
      .filter((c) => typeof c.q === 'string' || c.q.name !== 'key_revoked_within')
      .map((c) => textOf(c.q));
  } finally {
    spy.mockRestore();
  }
}
