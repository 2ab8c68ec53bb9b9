/**
 * Request limits (API.md, Identity and access), on express-rate-limit's
 * in-memory store: one budget per replica, reset every window (a minute).
 *
 * - principalRateLimit: RATE_LIMIT_PER_MINUTE requests per principal, after
 *   authentication; keyed by role and API key (or subject for a JWT).
 * - failedAuthLimiter: the same number of failed authentications per client
 *   address (req.ip, so behind `trust proxy` the X-Forwarded-For address).
 *   Only failures are counted and only failures are refused: a caller with
 *   valid credentials from an address over the limit still gets in. The
 *   limit stops guessing tokens; it does not lock out the honest users
 *   behind a NAT or proxy shared with a guesser.
 *
 * Over a limit: 429 rate_limited with Retry-After; every counted response
 * carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (IETF
 * draft 6 headers, with RateLimit-Policy). Each call makes its own store, so
 * each app built gets its own budgets.
 */
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, rateLimit, type Options, type RateLimitRequestHandler } from 'express-rate-limit';
import type { Config } from '../config';
import { type Principal, principalKey } from '../core/principal';
import { sendProblem } from './middleware';

export interface RateLimitOptions {
  /** The window, in milliseconds (default a minute); tests use a short one. */
  windowMs?: number;
}

export const DEFAULT_WINDOW_MS = 60_000;

/** What both limiters share: the limit, the window, the headers and the 429. */
function limiterOptions(
  config: Pick<Config, 'rateLimitPerMinute'>,
  options: RateLimitOptions,
  detail: string,
): Partial<Options> {
  return {
    windowMs: options.windowMs ?? DEFAULT_WINDOW_MS,
    limit: config.rateLimitPerMinute,
    // RateLimit-Limit, -Remaining, -Reset (and -Policy); with any headers on, a 429 also gets Retry-After.
    standardHeaders: 'draft-6',
    legacyHeaders: false,
    handler: (_req, res) => sendProblem(res, 'rate_limited', detail),
  };
}

function principalOf(res: Response): Principal | undefined {
  return (res.locals as { principal?: Principal }).principal;
}

/**
 * RATE_LIMIT_PER_MINUTE requests per principal (res.locals.principal, set by
 * authentication before this runs). A request without a principal passes
 * untouched: it is not this limiter's to count.
 */
export function principalRateLimit(
  config: Pick<Config, 'rateLimitPerMinute'>,
  options: RateLimitOptions = {},
): RequestHandler {
  return rateLimit({
    ...limiterOptions(config, options, 'Too many requests for this principal; retry after Retry-After seconds'),
    skip: (_req, res) => principalOf(res) === undefined,
    // The key is not an address, so express-rate-limit's address checks do not run (nor apply).
    keyGenerator: (_req, res) => principalKey(principalOf(res)!),
  });
}

/** The client address's budget key: IPv6 addresses by their /56, as express-rate-limit advises. */
function addressKey(req: Request): string {
  return ipKeyGenerator(req.ip ?? 'unknown');
}

export interface FailedAuthLimiter {
  /**
   * Counts one failed authentication for the request's address. Within the
   * limit it calls `onAllowed` (which answers the 401); over it, it answers
   * 429 rate_limited itself. Rejects only on an unexpected limiter error.
   */
  fail(req: Request, res: Response, onAllowed: () => void): Promise<void>;
  /**
   * Whether the request's address is already over the limit in this window,
   * without counting anything.
   */
  isBlocked(req: Request): Promise<boolean>;
}

/** RATE_LIMIT_PER_MINUTE failed authentications per client address. */
export function failedAuthLimiter(
  config: Pick<Config, 'rateLimitPerMinute'>,
  options: RateLimitOptions = {},
): FailedAuthLimiter {
  const limiter: RateLimitRequestHandler = rateLimit({
    ...limiterOptions(
      config,
      options,
      'Too many failed authentications from this address; retry after Retry-After seconds',
    ),
    // With a key generator of its own, express-rate-limit's address checks do not run. req.ip
    // follows TRUST_PROXY: by default X-Forwarded-For is believed only from private-network
    // peers (a gateway), so a client on the internet cannot pick its own address.
    keyGenerator: (req) => addressKey(req),
  });
  return {
    async fail(req, res, onAllowed) {
      // next() is how express-rate-limit lets a request through (or hands on its error).
      const outcome: { allowed: boolean; error?: Error } = { allowed: false };
      await limiter(req, res, (err?: unknown) => {
        if (err === undefined) outcome.allowed = true;
        else outcome.error = err instanceof Error ? err : new Error('Rate limiter failed', { cause: err });
      });
      if (outcome.error !== undefined) throw outcome.error;
      if (outcome.allowed) onAllowed();
    },
    async isBlocked(req) {
      const info = await limiter.getKey(addressKey(req));
      return info !== undefined && info.totalHits > config.rateLimitPerMinute;
    },
  };
}
