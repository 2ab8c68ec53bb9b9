/**
 * One participant's live side on this replica: its connector (one
 * connection reused by every call), its circuit breaker, its status
 * (connecting → ready | failing; disabled) and last error, and the metrics of
 * its calls. A connector that could not start is replaced by a new one on
 * the next use, so an upstream that comes back is reached again without a
 * restart of the service.
 */
import { ParticipantCallError, ParticipantUnavailableError } from '../core/remote-action';
import type { ToolLogger } from '../core/tool-interface';
import type { CallOutcome, ParticipantMetrics } from '../observability/participant-metrics';
import { CircuitBreaker } from './circuit-breaker';
import { truncate } from './redaction';
import type { ParticipantStatus } from './participant-records';
import type { ParticipantCaller } from './participant-tools';
import {
  UpstreamTimeoutError,
  UpstreamUnavailableError,
  type UpstreamCallResult,
  type UpstreamConnector,
  type UpstreamInfo,
  type UpstreamTool,
} from './upstream';

export interface RuntimeOptions {
  participant: string;
  makeConnector: () => UpstreamConnector;
  logger: ToolLogger;
  metrics: ParticipantMetrics | undefined;
  /** The upstream said its tools changed (MCP notifications/tools/list_changed). */
  onToolsChanged: () => void;
  /** Status changes (connecting, ready, failing). */
  onState?: (runtime: ParticipantRuntime) => void;
}

/** A message safe to show and store: the error's own text, which connectors keep free of secrets, bounded. */
function safeMessage(err: unknown): string {
  return truncate(err instanceof Error ? err.message : String(err), 300);
}

export class ParticipantRuntime implements ParticipantCaller {
  status: ParticipantStatus = 'connecting';
  lastError: string | null = null;
  private connector: UpstreamConnector | undefined;
  private starting: Promise<UpstreamConnector> | undefined;
  private readonly breaker: CircuitBreaker;
  private closed = false;

  constructor(private readonly opts: RuntimeOptions) {
    this.breaker = new CircuitBreaker({ participant: opts.participant });
    opts.metrics?.setUp(opts.participant, false);
  }

  info(): UpstreamInfo {
    return this.connector?.info() ?? {};
  }

  /** Connects (once; again after a failure). Throws UpstreamUnavailableError when it cannot. */
  start(): Promise<UpstreamConnector> {
    if (this.closed)
      return Promise.reject(new UpstreamUnavailableError(`Participant ${this.opts.participant} is closed`));
    if (this.connector) return Promise.resolve(this.connector);
    this.starting ??= this.connect().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** The upstream's tools now (through the breaker: a down upstream counts as a failure). */
  async listTools(): Promise<UpstreamTool[]> {
    return this.breaker.run(async () => {
      const connector = await this.start();
      try {
        const tools = await connector.listTools();
        this.setState('ready', null);
        return tools;
      } catch (err) {
        if (err instanceof UpstreamUnavailableError) this.setState('failing', safeMessage(err));
        throw err;
      }
    }, isUnavailable);
  }

  async call(
    upstreamName: string,
    args: Record<string, unknown>,
    options: { timeoutMs: number; headers?: Record<string, string>; signal?: AbortSignal },
  ): Promise<UpstreamCallResult> {
    const started = performance.now();
    let outcome: CallOutcome = 'failed';
    try {
      const result = await this.breaker.run(async () => {
        const connector = await this.start();
        return connector.call(upstreamName, args, {
          signal: options.signal ?? new AbortController().signal,
          timeoutMs: options.timeoutMs,
          ...(options.headers ? { headers: options.headers } : {}),
        });
      }, isUnavailable);
      outcome = result.isError ? 'error' : 'ok';
      if (this.status !== 'ready') this.setState('ready', null);
      return result;
    } catch (err) {
      if (err instanceof ParticipantUnavailableError) {
        outcome = 'unavailable';
        throw err;
      }
      if (err instanceof UpstreamUnavailableError) {
        outcome = 'unavailable';
        this.setState('failing', safeMessage(err));
        throw new ParticipantUnavailableError(
          this.opts.participant,
          this.breaker.state() === 'closed' ? 1 : this.breaker.retryAfterSeconds(),
          `Participant ${this.opts.participant} is unavailable`,
          { cause: err },
        );
      }
      if (err instanceof UpstreamTimeoutError) {
        outcome = 'timeout';
        throw new ParticipantCallError(
          `Participant ${this.opts.participant} did not answer ${upstreamName} within ${options.timeoutMs} ms`,
          { cause: err },
        );
      }
      throw err;
    } finally {
      this.opts.metrics?.observeCall(this.opts.participant, outcome, (performance.now() - started) / 1000);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const connector = this.connector ?? (await this.starting?.catch(() => undefined));
    this.connector = undefined;
    await connector?.close().catch((err: unknown) => this.opts.logger.warn({ err }, 'closing a participant failed'));
  }

  private async connect(): Promise<UpstreamConnector> {
    let connector: UpstreamConnector | undefined;
    try {
      connector = this.opts.makeConnector();
      await connector.start();
    } catch (err) {
      await connector?.close().catch(() => undefined);
      this.setState('failing', safeMessage(err));
      throw err instanceof UpstreamUnavailableError
        ? err
        : new UpstreamUnavailableError(safeMessage(err), { cause: err });
    }
    if (this.closed) {
      await connector.close().catch(() => undefined);
      throw new UpstreamUnavailableError(`Participant ${this.opts.participant} is closed`);
    }
    connector.onToolsChanged(() => this.opts.onToolsChanged());
    this.connector = connector;
    this.setState('ready', null);
    return connector;
  }

  private setState(status: ParticipantStatus, lastError: string | null): void {
    const changed = status !== this.status || lastError !== this.lastError;
    this.status = status;
    if (lastError !== null || status === 'ready') this.lastError = lastError ?? this.lastError;
    // A runtime replaced (its participant changed) must not speak for its successor.
    if (!this.closed) this.opts.metrics?.setUp(this.opts.participant, status === 'ready');
    if (changed) this.opts.onState?.(this);
  }
}

function isUnavailable(err: unknown): boolean {
  return err instanceof UpstreamUnavailableError;
}
