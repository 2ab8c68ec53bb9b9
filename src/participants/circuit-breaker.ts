/**
 * A participant's circuit breaker (API.md "Participants", Calls): after
 * FAILURE_THRESHOLD failures in a row the circuit opens and calls fail at
 * once with ParticipantUnavailableError (503 participant_unavailable,
 * Retry-After) instead of waiting on an upstream that is down. When the
 * backoff has elapsed one call goes through as a probe (half-open): its
 * success closes the circuit, its failure opens it again with the backoff
 * doubled (1 s, 2 s, 4 s, … at most 60 s). The stdio transport restarts a
 * crashed child on the same schedule (`backoffMs`).
 *
 * Time comes from `now` so tests drive a clock of their own.
 */
import { ParticipantUnavailableError } from '../core/remote-action';

export type CircuitState = 'closed' | 'open' | 'half-open';

export interface CircuitBreakerOptions {
  /** The participant's name, carried by the errors. */
  participant: string;
  /** Failures in a row that open the circuit; default 5. */
  failureThreshold?: number;
  /** The first backoff; default 1,000 ms. */
  initialBackoffMs?: number;
  /** The longest backoff; default 60,000 ms. */
  maxBackoffMs?: number;
  /** Milliseconds; default Date.now. */
  now?: () => number;
}

export type CircuitListener = (state: CircuitState, previous: CircuitState) => void;

export const FAILURE_THRESHOLD = 5;
export const INITIAL_BACKOFF_MS = 1_000;
export const MAX_BACKOFF_MS = 60_000;

/** The backoff after the n-th opening in a row (n ≥ 1): 1 s doubling to 60 s, with the defaults. */
export function backoffMs(openings: number, initialMs = INITIAL_BACKOFF_MS, maxMs = MAX_BACKOFF_MS): number {
  const n = Math.max(1, Math.floor(openings));
  // 2 ** 30 already exceeds any sane maximum; the cap keeps the power finite.
  return Math.min(maxMs, initialMs * 2 ** Math.min(n - 1, 30));
}

export class CircuitBreaker {
  readonly participant: string;
  private readonly threshold: number;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly now: () => number;
  private readonly listeners: CircuitListener[] = [];
  private current: CircuitState = 'closed';
  private failures = 0;
  /** Openings since the last success: the backoff doubles with each. */
  private openings = 0;
  private openUntil = 0;
  private probing = false;

  constructor(options: CircuitBreakerOptions) {
    this.participant = options.participant;
    this.threshold = options.failureThreshold ?? FAILURE_THRESHOLD;
    this.initialMs = options.initialBackoffMs ?? INITIAL_BACKOFF_MS;
    this.maxMs = options.maxBackoffMs ?? MAX_BACKOFF_MS;
    this.now = options.now ?? Date.now;
  }

  /** `open` until the backoff elapses, then `half-open` (the next call is the probe). */
  state(): CircuitState {
    if (this.current === 'open' && this.now() >= this.openUntil) return 'half-open';
    return this.current;
  }

  /** Consecutive failures counted so far (0 after a success). */
  consecutiveFailures(): number {
    return this.failures;
  }

  /** Called with (new state, previous state) when the circuit opens, half-opens for a probe, or closes. */
  onStateChange(listener: CircuitListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /**
   * Throws ParticipantUnavailableError while the circuit is open, or while a
   * probe is already in flight. Otherwise the caller may call; when the
   * backoff has elapsed this call is the probe.
   */
  check(): void {
    if (this.current === 'closed') return;
    if (this.current === 'open' && this.now() >= this.openUntil) {
      this.probing = true;
      this.transition('half-open');
      return;
    }
    throw this.unavailable();
  }

  /**
   * Runs `fn` through the breaker. `isFailure` says which errors count (the
   * upstream could not be reached); any other error is neutral: it neither
   * counts nor resets the row, and a probe that ends in one lets the next
   * call probe again.
   */
  async run<T>(fn: () => Promise<T>, isFailure: (err: unknown) => boolean): Promise<T> {
    this.check();
    let value: T;
    try {
      value = await fn();
    } catch (err) {
      if (isFailure(err)) this.recordFailure();
      else this.releaseProbe();
      throw err;
    }
    this.recordSuccess();
    return value;
  }

  recordSuccess(): void {
    this.failures = 0;
    this.openings = 0;
    this.probing = false;
    if (this.current !== 'closed') this.transition('closed');
  }

  recordFailure(): void {
    this.failures += 1;
    if (this.current === 'half-open' || (this.current === 'closed' && this.failures >= this.threshold)) {
      this.open();
    }
  }

  /** Seconds until the next probe may go, at least 1 (Retry-After). */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.openUntil - this.now()) / 1000));
  }

  private open(): void {
    this.openings += 1;
    this.probing = false;
    this.openUntil = this.now() + backoffMs(this.openings, this.initialMs, this.maxMs);
    this.transition('open');
  }

  /** A probe that ended in an error that does not count: the next call may probe again. */
  private releaseProbe(): void {
    if (this.current !== 'half-open') return;
    this.probing = false;
    this.current = 'open';
    this.openUntil = this.now();
  }

  private unavailable(): ParticipantUnavailableError {
    const seconds = this.probing ? 1 : this.retryAfterSeconds();
    return new ParticipantUnavailableError(
      this.participant,
      seconds,
      `Participant ${this.participant} is unavailable: its circuit is open after repeated failures`,
    );
  }

  private transition(next: CircuitState): void {
    const previous = this.current;
    this.current = next;
    if (previous === next) return;
    for (const listener of [...this.listeners]) listener(next, previous);
  }
}
