/**
 * The bearer-token gate in front of every endpoint but the public ones
 * (API.md, Identity and access): it sets `req.principal`, or answers 401
 * problem+json with `WWW-Authenticate` (on MCP paths naming the RFC 9728
 * metadata document). Failed attempts go through the per-address limiter
 * first, so guessing is slowed to RATE_LIMIT_PER_MINUTE per address.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Authenticator } from '../auth/authenticator';
import type { Principal } from '../core/principal';
import { AppError } from './problem';
import { sendProblem } from './middleware';

declare module 'express-serve-static-core' {
  interface Request {
    /** The authenticated caller (src/http/authenticate.ts). */
    principal?: Principal;
  }
}

/** Paths anyone may call: the probes, metrics, the docs and spec, the console's page, and the RFC 9728/8414 documents. */
export function isPublicPath(path: string): boolean {
  return (
    path === '/healthz' ||
    path === '/readyz' ||
    path === '/metrics' ||
    path === '/openapi.json' ||
    path === '/docs' ||
    path.startsWith('/docs/') ||
    path === '/console' ||
    path.startsWith('/console/') ||
    path.startsWith('/.well-known/')
  );
}

/** RFC 6750's b64token, bounded. */
const BEARER_RE = /^Bearer +([A-Za-z0-9\-._~+/]{1,8192}=*) *$/i;

const MCP_PATH_RE = /^\/conversations\/([^/]+)\/mcp\/?$/;

/** The URL of the RFC 9728 metadata document of an MCP path, as the client reached us. */
export function resourceMetadataUrl(req: Request, encodedConversationId: string): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}/.well-known/oauth-protected-resource/conversations/${encodedConversationId}/mcp`;
}

export interface FailedAuthGate {
  /** Counts one failure of this address; calls `refuse` (the 401) unless the address is over its limit (then 429). */
  (req: Request, res: Response, refuse: () => void): void;
}

function challenge(req: Request, presented: boolean): string {
  const parts = ['Bearer realm="tool-gateway"'];
  if (presented) parts.push('error="invalid_token"');
  const mcp = MCP_PATH_RE.exec(req.path);
  if (mcp) parts.push(`resource_metadata="${resourceMetadataUrl(req, mcp[1]!)}"`);
  return parts.join(', ');
}

/** The request's bearer token (the gate has checked its form), or undefined. */
export function bearerTokenOf(req: Request): string | undefined {
  const header = req.headers.authorization;
  return header === undefined ? undefined : BEARER_RE.exec(header)?.[1];
}

export function authenticate(authenticator: Authenticator, failedAuth: FailedAuthGate): RequestHandler {
  return (req, res, next) => {
    if (isPublicPath(req.path)) return next();
    const header = req.headers.authorization;
    const match = header === undefined ? null : BEARER_RE.exec(header);
    const refuse = (detail: string, presented: boolean): void =>
      failedAuth(req, res, () => {
        res.setHeader('WWW-Authenticate', challenge(req, presented));
        sendProblem(res, 'unauthorized', detail);
      });
    if (!match) {
      // RFC 6750 §3.1: error="invalid_token" only when bearer credentials were sent.
      const bearerSent = header !== undefined && /^Bearer\b/i.test(header);
      return refuse(
        header === undefined
          ? 'This endpoint needs Authorization: Bearer TOKEN'
          : bearerSent
            ? 'The bearer token is malformed (RFC 6750 characters, at most 8192)'
            : 'The Authorization header must be Bearer TOKEN',
        bearerSent,
      );
    }
    const token = match[1]!;
    const known = authenticator.known(token);
    if (known !== undefined) {
      req.principal = known;
      res.locals.principal = known;
      return next();
    }
    authenticator.authenticate(token).then(
      (principal) => {
        if (!principal) return refuse('The token is unknown, revoked or expired', true);
        req.principal = principal;
        res.locals.principal = principal;
        next();
      },
      (err: unknown) => next(err),
    );
  };
}

/** The caller of a request that passed `authenticate` (controllers take it from tsoa's @Request). */
export function principalOf(req: Request): Principal {
  if (!req.principal) throw new AppError('unauthorized', 'This endpoint needs Authorization: Bearer TOKEN');
  return req.principal;
}
