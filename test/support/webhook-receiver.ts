/**
 * A webhook receiver for the tests: a real HTTP server on port 0 that keeps
 * every request, answers as the test says (a status, or holding the request
 * open), and checks signatures with the Standard Webhooks library itself,
 * as an independent receiver would.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { waitFor } from './poll';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** What to answer: a status, or 'hold' (never answer; the connection stays open until close()). */
export type Answer = number | 'hold';

export interface WebhookReceiver {
  url(path: string): string;
  readonly received: Received[];
  /** Answers for the next requests to `path`, in order; then 204. */
  answer(path: string, ...answers: Answer[]): void;
  /** Waits (with a deadline) until `path` has received at least `n` requests. */
  waitForRequests(path: string, n: number, ms?: number): Promise<Received[]>;
  of(path: string): Received[];
  close(): Promise<void>;
}

/** Verifies with the Standard Webhooks library (throws on a bad signature or a stale timestamp); the parsed body. */
export function verified(r: Received, secret: string): unknown {
  return new Webhook(secret).verify(r.body, r.headers);
}

export async function startReceiver(): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const answers = new Map<string, Answer[]>();
  const held: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      received.push({ path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const answer = answers.get(path)?.shift() ?? 204;
      if (answer === 'hold') held.push(res);
      else res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const of = (path: string): Received[] => received.filter((r) => r.path === path);
  return {
    url: (path) => `${base}${path}`,
    received,
    answer: (path, ...list) => answers.set(path, [...(answers.get(path) ?? []), ...list]),
    of,
    waitForRequests: async (path, n, ms = 20_000) => {
      await waitFor(`${n} webhook request(s) at ${path} (got ${of(path).length})`, () => of(path).length >= n, ms);
      return of(path);
    },
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
