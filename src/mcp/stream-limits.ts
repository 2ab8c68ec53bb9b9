/**
 * The long-lived MCP streams one replica holds (2026 `subscriptions/listen`
 * responses, 2025 GET streams): the only per-client state left in stateless
 * serving. Each holds a socket and a bus listener, so they are bounded per
 * principal (one caller cannot take every slot) and in all.
 */
import { type Principal, principalKey } from '../core/principal';

export type StreamRefusal = 'full' | 'principal-full';

export class StreamLimits {
  private readonly held = new Map<string, number>();
  private readonly open = new Map<() => void, () => void>();

  constructor(
    readonly max: number,
    readonly perPrincipal: number,
  ) {}

  get size(): number {
    return this.open.size;
  }

  /** Why another stream cannot open now for this principal, or undefined when it can. */
  refusal(principal: Principal): StreamRefusal | undefined {
    if ((this.held.get(principalKey(principal)) ?? 0) >= this.perPrincipal) return 'principal-full';
    return this.open.size >= this.max ? 'full' : undefined;
  }

  /**
   * Counts a stream from now; `end` ends it (on shutdown). Returns the
   * release, to call when the stream closes (idempotent).
   */
  hold(principal: Principal, end: () => void): () => void {
    const key = principalKey(principal);
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.open.delete(end);
      const n = (this.held.get(key) ?? 1) - 1;
      if (n > 0) this.held.set(key, n);
      else this.held.delete(key);
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
