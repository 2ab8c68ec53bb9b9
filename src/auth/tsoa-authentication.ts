/**
 * tsoa's authentication hook for `@Security('bearer')` (the spec's root
 * security, which makes Swagger UI's Authorize send the token). The work is
 * done before routing by src/http/authenticate.ts for every path, MCP
 * included; this only hands tsoa the principal found there.
 */
import type { Request } from 'express';
import type { Principal } from '../core/principal';
import { principalOf } from '../http/authenticate';

export function expressAuthentication(req: Request, _securityName: string, _scopes?: string[]): Promise<Principal> {
  try {
    return Promise.resolve(principalOf(req));
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
