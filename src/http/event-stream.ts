/**
 * Server-Sent Events for the event feed (src/core/events.ts): `GET /events`
 * and `GET /conversations/{id}/events` write here once the controller has
 * decided access.
 *
 * What a replica keeps per open stream is its socket, a sink and its entry in
 * the feed's index: no timer of its own. One shared timer sends the keep-alive
 * comment (every 15 s, so proxies that drop idle connections after 30 to 60 s
 * keep them) and checks each stream's credentials again (a revoked or expired
 * key, or one whose conversation was deleted, loses its stream within 5 s), and
 * none runs while no stream is open. Each event's frame is written once and
 * shared by every stream it goes to. Open streams are bounded per principal
 * (EVENTS_MAX_STREAMS_PER_PRINCIPAL) and per replica, as the MCP streams are
 * (src/mcp/stream-limits.ts).
 */
import type { Request, Response } from 'express';
import { AppError } from '../core/errors';
import type { EventFeed, EventSink, StreamScope } from '../core/events';
import type { LoggedEvent } from '../core/ports';
import type { Principal } from '../core/principal';
import { StreamLimits } from '../mcp/stream-limits';
import type { Services } from '../services';
import { bearerTokenOf } from './authenticate';

/** How often open streams' credentials are checked again (revocation is refused within 5 s). */
const RECHECK_MS = 3000;
/** Keep-alive comments go out every this many rechecks (15 s). */
const KEEP_ALIVE_EVERY = 5;
/** A client this far behind (bytes not yet taken) is ended; it resumes with Last-Event-ID. */
const MAX_UNSENT_BYTES = 1024 * 1024;
/** Open streams of one replica at most; 1,000 idle ones cost well under 100 MB. */
const MAX_STREAMS = 10_000;
/** What EventSource clients wait before reconnecting (they send Last-Event-ID then). */
const RETRY_MS = 2000;

/** The SSE frame of an event, made once whatever the number of streams it goes to. */
const frames = new WeakMap<LoggedEvent, string>();

export function frameOf(e: LoggedEvent): string {
  let frame = frames.get(e);
  if (frame === undefined) {
    const data = JSON.stringify({ type: e.type, conversationId: e.conversationId, at: e.at, subject: e.subject });
    frame = `id: ${e.id}\nevent: ${e.type}\ndata: ${data}\n\n`;
    frames.set(e, frame);
  }
  return frame;
}

/** A comment line (no newline can end it early). */
function commentFrame(text: string): string {
  return `: ${text.replace(/[\r\n]+/g, ' ')}\n\n`;
}

/**
 * The Last-Event-ID header as an id, undefined when absent; 400 when it is
 * not one this API sends (a non-negative integer).
 */
export function parseLastEventId(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const id = Number(value.trim());
  if (!/^\d{1,16}$/.test(value.trim()) || !Number.isSafeInteger(id)) {
    throw new AppError('validation_failed', 'Last-Event-ID must be the id of an event this API sent', [
      { path: 'Last-Event-ID', message: 'must be a non-negative integer' },
    ]);
  }
  return id;
}

interface OpenStream {
  res: Response;
  token: string | undefined;
  principal: Principal;
}

export class EventStreams {
  private readonly limits: StreamLimits;
  private readonly open = new Set<OpenStream>();
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;

  constructor(
    private readonly services: Services,
    private readonly feed: EventFeed,
  ) {
    this.limits = new StreamLimits(MAX_STREAMS, services.config.eventsMaxStreamsPerPrincipal);
  }

  get size(): number {
    return this.open.size;
  }

  /** Serves one stream of `scope` (access already decided) until the client goes away. */
  async serve(req: Request, res: Response, scope: StreamScope, lastEventId: number | undefined): Promise<void> {
    const refusal = this.limits.refusal(scope.principal);
    if (refusal === 'full') throw new AppError('unavailable', 'Too many open event streams; retry later');
    if (refusal !== undefined) {
      throw new AppError(
        'rate_limited',
        `This principal holds ${this.limits.perPrincipal} open event streams (EVENTS_MAX_STREAMS_PER_PRINCIPAL); close one before opening another`,
      );
    }
    // The log must answer before the 200 goes out: a database away is a 503, not a stream that ends at once.
    await this.feed.ready();
    res.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      // Proxies that buffer responses (nginx) would hold events back.
      'X-Accel-Buffering': 'no',
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    res.write(`retry: ${RETRY_MS}\n\n`);
    const stream: OpenStream = { res, token: bearerTokenOf(req), principal: scope.principal };
    const release = this.limits.hold(scope.principal, () => res.end());
    this.open.add(stream);
    this.tickWhileOpen();
    const subscription = await this.feed.subscribe(scope, lastEventId, sinkOf(res)).catch((err: unknown) => {
      this.services.logger.warn({ err }, 'events: a stream could not start');
      res.end();
      return undefined;
    });
    const closed = (): void => {
      subscription?.close();
      release();
      this.open.delete(stream);
      if (this.open.size === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
    if (res.destroyed || res.writableEnded) closed();
    else res.once('close', closed);
  }

  /** Ends every open stream (shutdown). */
  closeAll(): void {
    this.limits.closeAll();
  }

  private tickWhileOpen(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), RECHECK_MS);
    this.timer.unref();
  }

  private tick(): void {
    const keepAlive = ++this.ticks % KEEP_ALIVE_EVERY === 0;
    const auth = this.services.authenticator;
    for (const s of this.open) {
      if (keepAlive) s.res.write(': keep-alive\n\n');
      if (s.token === undefined) continue;
      const now = auth.known(s.token);
      if (now !== undefined) continue;
      auth.authenticate(s.token).then(
        (still) => {
          if (still === undefined) s.res.end();
        },
        () => undefined, // the database unreachable: decided at the next check
      );
    }
  }
}

function sinkOf(res: Response): EventSink {
  return {
    send: (e) => {
      if (res.writableEnded || res.destroyed) return true;
      const below = res.write(frameOf(e));
      // Too far behind: cut off (not ended: an end would wait for the client to take it all).
      if (res.writableLength > MAX_UNSENT_BYTES) res.destroy();
      return below;
    },
    comment: (text) => {
      if (!res.writableEnded) res.write(commentFrame(text));
    },
    drained: () =>
      res.writableNeedDrain && !res.writableEnded
        ? new Promise<void>((resolve) => {
            const done = (): void => {
              res.off('drain', done);
              res.off('close', done);
              resolve();
            };
            res.once('drain', done);
            res.once('close', done);
          })
        : Promise.resolve(),
    end: () => res.end(),
  };
}

/** The streams of the app built for `services` (one per app: the controllers find them here). */
const registry = new WeakMap<Services, EventStreams>();

export function eventStreamsOf(services: Services): EventStreams {
  let streams = registry.get(services);
  if (!streams) registry.set(services, (streams = new EventStreams(services, services.events)));
  return streams;
}

/** Ends the open event streams of `services` (the entry file, at shutdown). */
export function closeEventStreams(services: Services): void {
  registry.get(services)?.closeAll();
}
