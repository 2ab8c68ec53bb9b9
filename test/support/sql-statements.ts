/**
 * The SQL statements the service sends while `fn` runs, as they reach pg's
 * Client (a named statement by its name, other text as it is). Left out:
 * what runs in the background whatever the request (the authenticator's
 * revocation poll, and the audit's batch writes and seals, which run on
 * timers: such a statement, and the COMMIT or ROLLBACK that ends its
 * transaction on the same connection).
 */
import { Client } from 'pg';

/** A statement's name, else its text. */
function nameOf(q: unknown): string {
  if (typeof q === 'string') return q.trim();
  const { name } = (q ?? {}) as { name?: unknown };
  return typeof name === 'string' ? name : textOf(q);
}

function textOf(q: unknown): string {
  if (typeof q === 'string') return q.trim();
  const { text } = (q ?? {}) as { text?: unknown };
  return typeof text === 'string' ? text.trim() : '';
}

/** Background audit work: a batch of queued entries, or a seal. */
function isAuditBackground(q: unknown): boolean {
  const text = textOf(q);
  return /^BEGIN; SET LOCAL synchronous_commit = off;/.test(text) || /\baudit_seal\(/.test(text);
}

export async function sqlStatements(fn: () => Promise<unknown>): Promise<string[]> {
  const spy = jest.spyOn(Client.prototype, 'query');
  try {
    await fn();
    const calls = spy.mock.calls.map((c, i): { q: unknown; client: unknown } => ({
      q: c[0],
      client: spy.mock.contexts[i],
    }));
    // A background statement, and the COMMIT or ROLLBACK its connection sends next, are the audit's; the
    // pool may hand that connection to a request before or after, whose statements still count.
    const closing = new Set<unknown>();
    const seen = new Set<unknown>();
    const own = calls.filter((c) => {
      const first = !seen.has(c.client);
      seen.add(c.client);
      // A connection's first statement here ending a transaction: one begun before `fn` (the audit's seal).
      if (first && /^(COMMIT|ROLLBACK)$/i.test(textOf(c.q))) return false;
      if (isAuditBackground(c.q)) {
        if (!/; COMMIT$/.test(textOf(c.q))) closing.add(c.client);
        return false;
      }
      if (closing.has(c.client) && /^(COMMIT|ROLLBACK)$/i.test(textOf(c.q))) {
        closing.delete(c.client);
        return false;
      }
      return true;
    });
    return own.map((c) => nameOf(c.q)).filter((name) => name !== 'key_revoked_within');
  } finally {
    spy.mockRestore();
  }
}
