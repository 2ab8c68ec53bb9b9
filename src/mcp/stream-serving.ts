/**
 * The MCP endpoint's long-lived streams (a 2026-07-28 `subscriptions/listen`,
 * a 2025 GET): refused past the open-stream bounds (StreamLimits), held for
 * their principal while open, and ended when the caller's credentials no
 * longer hold.
 */
import type { toNodeHandler } from '@modelcontextprotocol/node';
import type { Request, Response } from 'express';
import type { Principal } from '../core/principal';
import { bearerTokenOf } from '../http/authenticate';
import { sendProblem } from '../http/middleware';
import type { Logger } from '../logger';
import type { Services } from '../services';
import type { McpEventBus } from './event-bus';
import { serveLegacyStream } from './legacy-stream';
import { narrowListenFilter } from './resource-updates';
import type { StreamLimits } from './stream-limits';

/** How often an open stream's credentials are checked again (revocation is refused within 5 s). */
const STREAM_RECHECK_MS = 2000;

/** What serving a stream needs of the router that took it (made once per router). */
export interface StreamServing {
  services: Services;
  limits: StreamLimits;
  bus: McpEventBus;
  keepAliveMs: number;
  log: Logger;
  /** The SDK's serving entry (a listen stream is the SDK's). */
  node: ReturnType<typeof toNodeHandler>;
}

/** A GET (2025) or `subscriptions/listen` (2026-07-28) stream of `principal`, access already decided. */
export function serveStream(
  streams: StreamServing,
  req: Request,
  res: Response,
  principal: Principal,
): Promise<void> | void {
  const { services, limits, bus, keepAliveMs, log, node } = streams;
  const refusal = limits.refusal(principal);
  if (refusal === 'full') return sendProblem(res, 'unavailable', 'Too many open MCP streams; retry later');
  if (refusal === 'principal-full') {
    return sendProblem(
      res,
      'rate_limited',
      `This principal holds ${limits.perPrincipal} open MCP notification streams (MCP_MAX_STREAMS_PER_PRINCIPAL); close one before opening another`,
    );
  }
  if (refusal === 'owner-full') {
    return sendProblem(
      res,
      'rate_limited',
      `The keys of this conversation's owner hold ${limits.perOwner} open MCP notification streams together (MCP_MAX_STREAMS_PER_OWNER); close one before opening another`,
    );
  }
  // A stream outlives the request that opened it: its credentials are checked again while it is open,
  // so a revoked or expired key (or one whose conversation was deleted) loses it within the 5 s bound.
  const token = bearerTokenOf(req);
  const recheck = setInterval(() => {
    if (token === undefined) return;
    services.authenticator.authenticate(token).then(
      (still) => {
        if (still === undefined) {
          // Ours (GET) ends as limits end it; a listen stream is the SDK's: its connection is closed.
          if (req.method === 'GET') res.end();
          else res.destroy();
        }
      },
      () => undefined, // the database unreachable: decided at the next check
    );
  }, STREAM_RECHECK_MS);
  recheck.unref();
  res.once('close', () => clearInterval(recheck));
  if (req.method === 'GET') {
    res.once(
      'close',
      limits.hold(principal, () => res.end()),
    );
    return serveLegacyStream(req, res, bus, keepAliveMs, log);
  }
  // Resource URIs of this conversation only (the bus is every conversation's).
  narrowListenFilter(req.body, req.params.conversationId as string);
  // A listen stream is the SDK's to end (handler.close() answers it with its graceful completion first).
  res.once(
    'close',
    limits.hold(principal, () => undefined),
  );
  return node(req, res, req.body);
}
