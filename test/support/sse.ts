/**
 * A Server-Sent Events client for tests: a GET over real HTTP, parsed with
 * eventsource-parser, each event kept with the moment it arrived; waiting is
 * on the events themselves (with a deadline), never a sleep.
 */
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { createParser } from 'eventsource-parser';

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: { type: string; conversationId: string | null; at: number; subject: Record<string, unknown> };
  /** performance.now() when it arrived. */
  receivedAt: number;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage['headers'];
  events: SseEvent[];
  comments: string[];
  /** Resolves with the first event (after those already taken) that matches, or rejects after `ms`. */
  next(match?: (e: SseEvent) => boolean, ms?: number): Promise<SseEvent>;
  /** Resolves once the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

/** Opens `url` with these headers; resolves once the response's headers arrived. */
export function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let taken = 0;
      let wake: (() => void) | undefined;
      const parser = createParser({
        onEvent: (m) => {
          events.push({
            id: m.id,
            event: m.event,
            data: JSON.parse(m.data) as SseEvent['data'],
            receivedAt: performance.now(),
          });
          wake?.();
        },
        onComment: (c) => comments.push(c.trim()),
      });
      res.setEncoding('utf8');
      let body = '';
      res.on('data', (chunk: string) => {
        if ((res.statusCode ?? 0) >= 300) body += chunk;
        else parser.feed(chunk);
      });
      const ended = new Promise<void>((done) => {
        res.on('end', done);
        res.on('close', done);
      });
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        comments,
        ended,
        async next(match = () => true, ms = 5000) {
          const deadline = Date.now() + ms;
          for (;;) {
            while (taken < events.length) {
              const e = events[taken++]!;
              if (match(e)) return e;
            }
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`no matching event within ${ms} ms (got ${events.length} events)`);
            await new Promise<void>((r) => {
              const timer = setTimeout(r, left);
              wake = () => {
                clearTimeout(timer);
                r();
              };
            });
          }
        },
        close: () => req.destroy(),
      };
      (stream as SseStream & { body: () => string }).body = () => body;
      resolve(stream);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The JSON body of a refused (non-2xx) stream request. */
export async function refusal(s: SseStream): Promise<{ code?: string }> {
  await s.ended;
  return JSON.parse((s as SseStream & { body: () => string }).body()) as { code?: string };
}
