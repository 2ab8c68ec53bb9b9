/**
 * The WebhookSender port (src/core/ports/webhooks.ts): one message signed as
 * the Standard Webhooks specification says, by its reference library
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`), and posted
 * through the participants' guarded fetch, so a hook's URL obeys their
 * address rules also after DNS resolution and redirects. A 2xx within the
 * timeout is a success; anything else is a failure with a reason that names
 * no secret and quotes no response body.
 */
import { Webhook } from 'standardwebhooks';
import type { AttemptOutcome, WebhookMessage, WebhookSender } from '../core/ports/webhooks';
import type { GuardedFetch } from '../participants/address-rules';

export function webhookSender(fetch: GuardedFetch, now: () => Date = () => new Date()): WebhookSender {
  return {
    send: async (m: WebhookMessage): Promise<AttemptOutcome> => {
      const at = now();
      const signature = new Webhook(m.secret).sign(m.messageId, at, m.body);
      try {
        const res = await fetch(m.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'tool-orchestrator-webhooks',
            'webhook-id': m.messageId,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': signature,
          },
          body: m.body,
          signal: m.signal
            ? AbortSignal.any([m.signal, AbortSignal.timeout(m.timeoutMs)])
            : AbortSignal.timeout(m.timeoutMs),
        });
        // The body is not read: its size is the receiver's, not ours to hold.
        await res.body?.cancel().catch(() => undefined);
        if (res.status >= 200 && res.status < 300) return { ok: true, responseStatus: res.status };
        return { ok: false, responseStatus: res.status, error: `the receiver answered ${res.status}` };
      } catch (err) {
        return { ok: false, error: reasonOf(err, m.timeoutMs) };
      }
    },
  };
}

function reasonOf(err: unknown, timeoutMs: number): string {
  const e = err as { name?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const code = typeof e.cause?.code === 'string' ? ` (${e.cause.code})` : '';
  const message = typeof e.message === 'string' ? e.message : 'the request failed';
  return `${message}${code}`.slice(0, 300);
}
