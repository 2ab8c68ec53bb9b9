/**
 * The principals of bearer tokens already verified (src/auth/jwt.ts), keyed
 * by the whole token string, so a token seen again costs no signature check.
 * An entry answers only inside the token's own validity (nbf <= now < exp);
 * outside it the token is verified again, and refused. Bounded: the least
 * recently used entry goes first.
 *
 * A cached token stays accepted until its exp even if the provider drops its
 * key from the JWKS meanwhile, as it would until jose refetched the JWKS.
 */
import type { Principal } from '../core/principal';

interface Entry {
  principal: Principal;
  exp: number;
  nbf: number | undefined;
}

export class VerifiedTokenCache {
  /** Map iteration is insertion order: the first key is the least recently used. */
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries: number) {}

  get(token: string, nowSec: number): Principal | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (nowSec >= entry.exp) {
      this.entries.delete(token);
      return undefined;
    }
    if (entry.nbf !== undefined && nowSec < entry.nbf) return undefined;
    this.entries.delete(token);
    this.entries.set(token, entry);
    return entry.principal;
  }

  set(token: string, principal: Principal, exp: number, nbf: number | undefined): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(token);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(token, { principal: { ...principal }, exp, nbf });
  }
}
