/**
 * Bearer token → principal (API.md, Identity and access), with no database
 * round trip per request in steady state:
 *
 * - ADMIN_API_KEY, when set, is compared (as its hash) in memory.
 * - API keys are looked up by the SHA-256 of the token once, then served
 *   from a bounded cache. Each replica asks the database every second which
 *   keys were revoked lately and drops them, so a revoked key is refused on
 *   every replica within that second plus one poll. A cache entry is trusted
 *   only while the last poll that succeeded began less than STALE_AFTER_MS
 *   ago; after that (the database unreachable, say) every request is checked
 *   against the database again, and refused when it cannot be. Expiry is
 *   checked on every request from the cached expiry time.
 * - JWTs go to the JWT verifier (its own cache and JWKS handling).
 */
import type { Logger } from '../logger';
import { BUILT_IN_ADMIN_SUBJECT, hashToken, TOKEN_RE } from '../core/keys';
import type { KeyStore, StoredKey } from '../core/ports';
import type { Principal } from '../core/principal';
import type { Level } from '../core/tool-interface';

export interface TokenVerifier {
  verify(token: string): Promise<Principal | undefined>;
}

/** What besides stored keys is a credential: ADMIN_API_KEY, and JWTs of an identity provider. */
export interface OtherCredentials {
  adminApiKey: string | undefined;
  jwt: TokenVerifier | undefined;
  /** Whether a token is worth handing to `jwt` (default: never). */
  looksLikeJwt?: (token: string) => boolean;
}

export interface AuthenticatorOptions {
  /** How often revocations are polled. Default 1000 ms. */
  pollIntervalMs?: number;
  /** Cached keys are rechecked in the database once the last good poll is older than this. Default 4000 ms. */
  staleAfterMs?: number;
  /** Cached keys at most. Default 10,000. */
  maxCachedKeys?: number;
  now?: () => number;
}

/** The subject and key id of the ADMIN_API_KEY principal. */
export const ENV_ADMIN: Principal = { role: 'admin', subject: BUILT_IN_ADMIN_SUBJECT, keyId: 'env' };

/** Revocations are read back over this window; it only has to outlast one poll and a slow commit. */
const REVOCATION_WINDOW_S = 60;

interface CachedKey {
  principal: Principal;
  expiresAt: number | null;
}

export function principalOfKey(key: StoredKey): Principal {
  if (key.role === 'agent') {
    return {
      role: 'agent',
      subject: key.subject,
      keyId: key.id,
      conversationId: key.conversationId ?? undefined,
      ...(key.maxLevel !== null ? { maxLevel: key.maxLevel as Level } : {}),
    };
  }
  return { role: key.role, subject: key.subject, keyId: key.id };
}

export class Authenticator {
  private readonly cache = new Map<string, CachedKey>();
  /** token → its SHA-256, for the tokens of cached keys: a repeat caller costs no hashing. */
  private readonly hashes = new Map<string, string>();
  private readonly envAdminHash: string | undefined;
  private readonly pollIntervalMs: number;
  private readonly staleAfterMs: number;
  private readonly maxCachedKeys: number;
  private readonly now: () => number;
  private readonly jwt: TokenVerifier | undefined;
  private readonly looksLikeJwt: (token: string) => boolean;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  /** When the last poll that succeeded began; -Infinity until one has. */
  private lastGoodPoll = -Infinity;

  constructor(
    private readonly keys: KeyStore,
    private readonly logger: Logger,
    credentials: OtherCredentials,
    options: AuthenticatorOptions = {},
  ) {
    const { adminApiKey } = credentials;
    this.envAdminHash = adminApiKey === undefined ? undefined : hashToken(adminApiKey);
    this.jwt = credentials.jwt;
    this.looksLikeJwt = credentials.looksLikeJwt ?? (() => false);
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.staleAfterMs = options.staleAfterMs ?? 4000;
    this.maxCachedKeys = options.maxCachedKeys ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * The principal of a bearer token, or undefined when it is not a valid
   * credential (unknown, revoked, expired, malformed). Throws the
   * database's UnavailableError when a key cannot be checked.
   */
  async authenticate(token: string): Promise<Principal | undefined> {
    if (TOKEN_RE.test(token)) return this.apiKey(token);
    if (this.envAdminHash !== undefined && hashToken(token) === this.envAdminHash) return ENV_ADMIN;
    if (this.jwt && this.looksLikeJwt(token)) return this.jwt.verify(token);
    return undefined;
  }

  /**
   * The principal of a token that memory alone answers for: ADMIN_API_KEY,
   * or an API key cached, unexpired and covered by a recent poll. Undefined
   * when the answer needs `authenticate` (which also refuses). The request
   * path takes this first, so that steady state costs no promise.
   */
  known(token: string): Principal | undefined {
    if (!TOKEN_RE.test(token)) {
      return this.envAdminHash !== undefined && hashToken(token) === this.envAdminHash ? ENV_ADMIN : undefined;
    }
    const remembered = this.hashes.get(token);
    const hash = remembered ?? hashToken(token);
    if (hash === this.envAdminHash) return ENV_ADMIN;
    const hit = this.fromCache(hash);
    if (hit === undefined || hit === 'expired') return undefined;
    if (remembered === undefined) {
      // Only tokens of cached keys are remembered, so guessed tokens cannot fill the map.
      if (this.hashes.size >= this.maxCachedKeys) this.hashes.clear();
      this.hashes.set(token, hash);
    }
    return hit;
  }

  /**
   * A cached key's principal while a recent poll covers the cache, 'expired'
   * past the key's expiry, undefined when the database has to answer.
   */
  private fromCache(hash: string): Principal | 'expired' | undefined {
    const cached = this.cache.get(hash);
    if (cached === undefined) return undefined;
    const now = this.now();
    if (now - this.lastGoodPoll >= this.staleAfterMs) return undefined;
    return cached.expiresAt !== null && cached.expiresAt <= now ? 'expired' : cached.principal;
  }

  private async apiKey(token: string): Promise<Principal | undefined> {
    const hash = hashToken(token);
    if (hash === this.envAdminHash) return ENV_ADMIN;
    const hit = this.fromCache(hash);
    if (hit === 'expired') {
      this.cache.delete(hash);
      return undefined;
    }
    if (hit !== undefined) return hit;
    const key = await this.keys.findByHash(hash);
    if (!key || key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= this.now())) {
      this.cache.delete(hash);
      return undefined;
    }
    const principal = principalOfKey(key);
    if (this.cache.size >= this.maxCachedKeys) {
      // Oldest first: a Map iterates in insertion order.
      this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(hash, { principal, expiresAt: key.expiresAt });
    return principal;
  }

  /** Starts the revocation poll (the first one at once). */
  start(): void {
    if (this.timer) return;
    void this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One poll: drops the keys revoked lately from the cache (joins one already running). */
  poll(): Promise<void> {
    this.inFlight ??= this.pollOnce().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /**
   * A poll that begins after this call: what was revoked before it is
   * refused on this replica once it resolves (conversation deletion).
   */
  async refresh(): Promise<void> {
    if (this.inFlight) await this.inFlight;
    await this.poll();
  }

  private async pollOnce(): Promise<void> {
    const began = this.now();
    try {
      const revoked = await this.keys.revokedWithin(REVOCATION_WINDOW_S);
      for (const hash of revoked) this.cache.delete(hash);
      this.lastGoodPoll = began;
    } catch (err) {
      this.logger.warn({ err }, 'revoked keys could not be read; cached keys are rechecked until they can');
    }
  }

  /** Forgets a key at once on this replica (the others drop it at their next poll). */
  drop(tokenHash: string): void {
    this.cache.delete(tokenHash);
  }

  get cachedKeys(): number {
    return this.cache.size;
  }
}
