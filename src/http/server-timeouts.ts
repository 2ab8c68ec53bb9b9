/**
 * The HTTP server's timeouts, set deliberately rather than left at Node's
 * defaults (docs/CONFIGURATION.md says why each has its value).
 */
import type { Server } from 'node:http';

export interface HttpTimeouts {
  /** The whole header block must arrive within this; a slow client is answered 408 and cut off. */
  headersTimeoutMs: number;
  /** Headers and body must arrive within this (Node stops counting once the body is in). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number;
}

/**
 * Call before `listen` or in the same tick as it: Node starts checking the
 * first two timeouts when the server starts listening, at
 * `connectionsCheckingInterval` (default 30 s, which would let a slow client
 * hold a socket up to 30 s past its deadline).
 */
export function applyHttpTimeouts(server: Server, t: HttpTimeouts): Server {
  server.headersTimeout = t.headersTimeoutMs;
  server.requestTimeout = t.requestTimeoutMs;
  server.keepAliveTimeout = t.keepAliveTimeoutMs;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    1000,
    t.headersTimeoutMs,
  );
  return server;
}
