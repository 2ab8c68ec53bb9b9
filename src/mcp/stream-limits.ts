/**
 * The long-lived MCP streams one replica holds (2026 `subscriptions/listen`
 * responses, 2025 GET streams): the only per-client state left in stateless
 * serving. Each holds a socket and a bus listener, so they are bounded per
 * principal (one key cannot take every slot), per owner (a user's own keys
 * and the agent keys of its conversations together: minting more agent keys
 * does not buy more slots) and in all.
 */
import { type Principal, principalKey } from '../core/principal';

export type StreamRefusal = 'full' | 'principal-full' | 'owner-full';

/** Whose budget a principal's streams count against: its own subject, or (an agent) its conversation owner's. */
function ownerKey(p: Principal): string {
  return p.role === 'admin' ? `admin:${p.subject}` : `owner:${p.subject}`;
}

function add(map: Map<string, number>, key: string, n: number): void {
  const v = (map.get(key) ?? 0) + n;
  if (v > 0) map.set(key, v);
  else map.delete(key);
}

export class StreamLimits {
  private readonly held = new Map<string, number>();
  private readonly heldByOwner = new Map<string, number>();
  private readonly open = new Map<() => void, () => void>();

  constructor(
    readonly max: number,
    readonly perPrincipal: number,
    readonly perOwner: number = Infinity,
  ) {}

  get size(): number {
    return this.open.size;
  }

  /** Why another stream cannot open now for this principal, or undefined when it can. */
  refusal(principal: Principal): StreamRefusal | undefined {
    if ((this.held.get(principalKey(principal)) ?? 0) >= this.perPrincipal) return 'principal-full';
    if ((this.heldByOwner.get(ownerKey(principal)) ?? 0) >= this.perOwner) return 'owner-full';
    return this.open.size >= this.max ? 'full' : undefined;
  }

  /**
   * Counts a stream from now; `end` ends it (on shutdown). Returns the
   * release, to call when the stream closes (idempotent).
   */
  hold(principal: Principal, end: () => void): () => void {
    const key = principalKey(principal);
    const owner = ownerKey(principal);
    add(this.held, key, 1);
    add(this.heldByOwner, owner, 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.open.delete(end);
      add(this.held, key, -1);
      add(this.heldByOwner, owner, -1);
    };
    this.open.set(end, release);
    return release;
  }

  /** Ends every open stream and forgets it. */
  closeAll(): void {
    for (const [end, release] of [...this.open]) {
      end();
      release();
    }
  }
}
