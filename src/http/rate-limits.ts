/**
 * Request limits (API.md, Identity and access), counted by
 * rate-limiter-flexible's in-memory fixed windows: one budget per replica,
 * reset every window (a minute).
 *
 * - principalRateLimit: RATE_LIMIT_PER_MINUTE requests per principal, after
 *   authentication; keyed by role and API key (or subject for a JWT).
 * - failedAuthLimiter: the same number of failed authentications per client
 *   address (req.ip, so behind `trust proxy` the X-Forwarded-For address;
 *   IPv6 clients by their /56). Only failures are counted and only failures
 *   are refused: a caller with valid credentials from an address over the
 *   limit still gets in. The limit stops guessing tokens; it does not lock
 *   out the honest users behind a NAT or proxy shared with a guesser.
 *
 * Over a limit: 429 rate_limited with Retry-After; every counted response
 * carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (IETF
 * draft 6 headers, with RateLimit-Policy). Each call makes its own store, so
 * each app built gets its own budgets.
 *
 * The principal limiter runs on every request, so it is kept to one counter
 * update and four headers (express-rate-limit, used before, cost about a
 * fifth of negotiate's CPU time per request: docs/BENCHMARKS.md).
 */
import type { Request, RequestHandler, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config';
import { type Principal, principalKey } from '../core/principal';
import { sendProblem } from './middleware';

export interface RateLimitOptions {
  /** The window, in milliseconds (default a minute); tests use a short one. */
  windowMs?: number;
}

export const DEFAULT_WINDOW_MS = 60_000;

/** One fixed-window budget and the headers that report it. */
class Budget {
  private readonly limiter: RateLimiterMemory;
  private readonly policy: string;
  private readonly limitHeader: string;

  constructor(
    readonly limit: number,
    windowMs: number,
    private readonly detail: string,
  ) {
    this.limiter = new RateLimiterMemory({ points: limit, duration: windowMs / 1000 });
    this.policy = `${limit};w=${Math.ceil(windowMs / 1000)}`;
    this.limitHeader = String(limit);
  }

  /** Counts one hit for `key`; true when within the budget. Sets the headers either way, and answers the 429. */
  async take(key: string, res: Response): Promise<boolean> {
    let outcome: RateLimiterRes;
    let allowed = true;
    try {
      outcome = await this.limiter.consume(key);
    } catch (refused) {
      if (!(refused instanceof RateLimiterRes)) throw refused;
      outcome = refused;
      allowed = false;
    }
    if (res.headersSent) return allowed;
    const reset = String(Math.max(1, Math.ceil(outcome.msBeforeNext / 1000)));
    res.setHeader('RateLimit-Policy', this.policy);
    res.setHeader('RateLimit-Limit', this.limitHeader);
    res.setHeader('RateLimit-Remaining', String(outcome.remainingPoints));
    res.setHeader('RateLimit-Reset', reset);
    if (!allowed) {
      res.setHeader('Retry-After', reset);
      sendProblem(res, 'rate_limited', this.detail);
    }
    return allowed;
  }

  /** Whether `key` is over its budget in this window, without counting. */
  async exceeded(key: string): Promise<boolean> {
    const info = await this.limiter.get(key);
    return info !== null && info.consumedPoints > this.limit;
  }
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
  const budget = new Budget(
    config.rateLimitPerMinute,
    options.windowMs ?? DEFAULT_WINDOW_MS,
    'Too many requests for this principal; retry after Retry-After seconds',
  );
  return (_req, res, next) => {
    const principal = principalOf(res);
    if (principal === undefined) return next();
    budget.take(principalKey(principal), res).then((allowed) => {
      if (allowed) next();
    }, next);
  };
}

/**
 * The client address's budget key: IPv4 (and IPv4-mapped IPv6) as the
 * address, IPv6 by its /56, which is what one customer is usually given.
 */
export function addressKey(address: string | undefined): string {
  if (address === undefined || !ipaddr.isValid(address)) return 'unknown';
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/56`).toString()}/56`;
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
  // req.ip follows TRUST_PROXY: by default X-Forwarded-For is believed only from private-network
  // peers (a gateway), so a client on the internet cannot pick its own address.
  const budget = new Budget(
    config.rateLimitPerMinute,
    options.windowMs ?? DEFAULT_WINDOW_MS,
    'Too many failed authentications from this address; retry after Retry-After seconds',
  );
  return {
    async fail(req, res, onAllowed) {
      if (await budget.take(addressKey(req.ip), res)) onAllowed();
    },
    isBlocked(req) {
      return budget.exceeded(addressKey(req.ip));
    },
  };
}
