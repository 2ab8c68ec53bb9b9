/**
 * Bearer JWTs from an identity provider (AUTH_JWKS_URL, AUTH_ISSUER,
 * AUTH_AUDIENCE): the signature is checked with the provider's keys (fetched
 * from the JWKS URL, cached, refetched on an unknown kid), then iss, aud,
 * exp and nbf. The subject is `sub`; the role is the claim AUTH_ROLE_CLAIM.
 * A JWT is always a user or an admin, never an agent (agents are API keys).
 *
 * A token that is not valid for this service verifies to undefined (the
 * caller's trouble: 401); a JWKS that cannot be fetched throws
 * UnavailableError (the service's trouble: 503). A token without a kid is
 * refused when several of the provider's keys fit its alg.
 *
 * jose is ESM only and this service compiles to CommonJS, so it is loaded
 * with import() on first use: under jest that needs --experimental-vm-modules
 * (npm test passes it).
 */
import type * as Jose from 'jose' with { 'resolution-mode': 'import' };
import { UnavailableError } from '../core/errors';
import type { Principal } from '../core/principal';
import { VerifiedTokenCache } from './verified-token-cache';

export interface JwtVerifier {
  /** The principal of a valid token; undefined when the token is not a valid JWT for this service (bad signature, wrong iss/aud, expired, not yet valid, no sub, unknown kid even after refetch, malformed). Throws UnavailableError (src/core/errors.ts) when the JWKS cannot be fetched at all (network error/timeout/non-2xx), since that is the service's trouble, not the caller's. */
  verify(token: string): Promise<Principal | undefined>;
}

export interface JwtConfig {
  jwksUrl: string;
  issuer: string;
  audience: string;
  roleClaim: string;
}

export interface JwtVerifierOptions {
  /** Leeway for exp and nbf against the provider's clock; default 5 s. */
  clockToleranceSec?: number;
  /** Verified tokens remembered (0: none); default 1000. */
  cacheMaxEntries?: number;
}

/** Asymmetric algorithms only: never `none`, never HS* (a shared secret has no place in a JWKS). */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** An unknown kid refetches the JWKS at most this often, so a rotated key is picked up within seconds. */
const JWKS_COOLDOWN_MS = 5000;
const JWKS_TIMEOUT_MS = 5000;
/**
 * Errors of the key lookup that are the token's: no key, or several keys,
 * for its kid and alg (after a refetch when the cooldown allowed one).
 * Anything else there is the JWKS's: the fetch failed, timed out, answered
 * other than 200, or was no key set (ERR_JWKS_INVALID).
 */
const TOKEN_KEY_ERRORS = new Set(['ERR_JWKS_NO_MATCHING_KEY', 'ERR_JWKS_MULTIPLE_MATCHING_KEYS']);
const UNAVAILABLE = "The identity provider's keys (AUTH_JWKS_URL) cannot be fetched";

interface Verification {
  jwtVerify: typeof Jose.jwtVerify;
  getKey: Jose.JWTVerifyGetKey;
}

let jose: Promise<typeof Jose> | undefined;
const loadJose = (): Promise<typeof Jose> => (jose ??= import('jose'));

export function createJwtVerifier(cfg: JwtConfig, options: JwtVerifierOptions = {}): JwtVerifier {
  const jwksUrl = new URL(cfg.jwksUrl);
  const clockTolerance = options.clockToleranceSec ?? 5;
  const cache = new VerifiedTokenCache(options.cacheMaxEntries ?? 1000);
  let ready: Promise<Verification> | undefined;

  /** jose and the remote key set, once; a jose that cannot load is the service's trouble too. */
  const setUp = (): Promise<Verification> =>
    (ready ??= loadJose().then(({ jwtVerify, createRemoteJWKSet }) => {
      const remote = createRemoteJWKSet(jwksUrl, {
        cooldownDuration: JWKS_COOLDOWN_MS,
        timeoutDuration: JWKS_TIMEOUT_MS,
      });
      const getKey: Jose.JWTVerifyGetKey = async (header, token) => {
        try {
          return await remote(header, token);
        } catch (err) {
          if (TOKEN_KEY_ERRORS.has(codeOf(err))) throw err;
          throw new UnavailableError(err, UNAVAILABLE);
        }
      };
      return { jwtVerify, getKey };
    })).catch((err: unknown) => {
      throw err instanceof UnavailableError ? err : new UnavailableError(err, 'JWT verification cannot start');
    });

  return {
    async verify(token) {
      const nowSec = Date.now() / 1000;
      const cached = cache.get(token, nowSec);
      if (cached) return { ...cached };
      const { jwtVerify, getKey } = await setUp();
      let payload: Jose.JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, getKey, {
          issuer: cfg.issuer,
          audience: cfg.audience,
          algorithms: ALGORITHMS,
          // exp is required: a token that never expires could never be taken back.
          requiredClaims: ['sub', 'exp'],
          clockTolerance,
        }));
      } catch (err) {
        if (err instanceof UnavailableError) throw err;
        return undefined;
      }
      const principal = principalOf(payload, cfg.roleClaim);
      if (principal && typeof payload.exp === 'number') cache.set(token, principal, payload.exp, payload.nbf);
      return principal && { ...principal };
    },
  };
}

function principalOf(payload: Jose.JWTPayload, roleClaim: string): Principal | undefined {
  if (typeof payload.sub !== 'string' || payload.sub === '') return undefined;
  return { role: roleOf(payload[roleClaim]), subject: payload.sub };
}

/**
 * 'admin' or 'user' exactly; an array of strings (the shape of many
 * providers' roles claims) is admin when it holds 'admin'. Anything else,
 * or no claim, is a user. Only a top-level claim is read: a provider that
 * nests roles (Keycloak's realm_access.roles) needs a mapper to a top-level one.
 */
function roleOf(value: unknown): 'admin' | 'user' {
  if (value === 'admin') return 'admin';
  if (Array.isArray(value) && value.includes('admin')) return 'admin';
  return 'user';
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Cheap syntactic test: does this bearer token look like a JWT (three base64url parts, first decodes to a JSON header with alg)? Used to decide whether to try the JWT verifier or the API-key lookup. */
export function looksLikeJwt(token: string): boolean {
  // An empty signature (alg none) still looks like a JWT: the verifier refuses it.
  if (!JWT_SHAPE.test(token)) return false;
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8'));
    return typeof header === 'object' && header !== null && typeof (header as { alg?: unknown }).alg === 'string';
  } catch {
    return false;
  }
}
